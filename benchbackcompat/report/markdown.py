"""Escaping of text that plugins provide (method names, notes, reasons) for Markdown, file names and matplotlib, and
the width a published table may take."""
from __future__ import annotations

import hashlib
import re

from benchbackcompat.runtime.terminal import printable

PAGE_WIDTH = 160  # characters a table row may take on a published page (a screen, read without scrolling)
_HTML = {"&": "&amp;", "<": "&lt;"}  # no tag or entity can start without these
_PUNCTUATION = set("\\`*_[]|~$")  # inline markup, links, table cells, strikethrough, math


def escape(text: object) -> str:
    """One line of inert Markdown: ``<`` and ``&`` become entities, Markdown punctuation (``|`` included,
    so a table cell cannot be split) is backslash-escaped, line breaks and control characters become spaces."""
    out = []
    for char in str(text):
        if char in _HTML:
            out.append(_HTML[char])
        elif char in _PUNCTUATION:
            out.append("\\" + char)
        elif char.isspace() or not char.isprintable():
            out.append(" ")
        else:
            out.append(char)
    return "".join(out).strip()


def unmarked(text: str) -> str:
    """Markdown text as plain text for a terminal: no escapes, entities, bold or code marks (tables keep their
    pipes)."""
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text).replace("`", "")
    return re.sub(r"\\(.)", r"\1", text).replace("&lt;", "<").replace("&amp;", "&")


def slug(text: str) -> str:
    """A file-name-safe form of ``text``; a short hash keeps distinct texts distinct."""
    plain = re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.") or "x"
    if plain == text:
        return plain
    return f"{plain[:60]}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"


def plain_label(text: object) -> str:
    """Text for a matplotlib label: ``$`` would start mathtext, line breaks would break the layout, and control
    characters are shown as their escapes (``\\x1b``), as on the terminal."""
    return printable(re.sub(r"\s+", " ", str(text)).replace("$", r"\$").strip())


def widest_line(text: str) -> int:
    """The length of the longest line of ``text`` (0 for none)."""
    return max(map(len, text.splitlines()), default=0)
