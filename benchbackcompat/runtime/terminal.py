"""Text from records and stored files, made safe to print on a terminal.

A record's label, method, metric or reason is whatever its writer put there: an escape sequence (``\\x1b[2J`` clears
the screen, others move the cursor, retitle the window or hide text) or a bidirectional override would be obeyed by
the terminal. Control and format characters are shown as Python escapes instead, so the text reads as written.
"""
from __future__ import annotations

import unicodedata

UNSAFE = ("Cc", "Cf", "Zl", "Zp")  # control, format (bidirectional overrides), line and paragraph separators


def printable(text: object, *, lines: bool = False) -> str:
    """``text`` with every control or format character shown as its escape (``\\x1b``); ``lines``: line breaks kept
    (a whole report), else escaped too (one field, which must stay on its line)."""
    return "".join(char if (lines and char == "\n") or unicodedata.category(char) not in UNSAFE
                   else char.encode("unicode_escape").decode("ascii") for char in str(text))
