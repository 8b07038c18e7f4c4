"""What a stored number depends on besides its configuration: the code that computed it and the data's content.

A cell's key hashes its configuration together with

- the method's **code identity**: the distribution that ships it (name, version) and a SHA-256 of
  the code of every non-core package its class comes from, so editing a plugin makes its old cells
  stale even when nobody bumps the version. Comments, docstrings, blank lines and trailing spaces are
  not code: a corrected comment leaves the cells valid;
- :data:`RESULTS_VERSION`, the core's declared results version: bump it in the same commit as any
  deliberate change of the numbers the core produces (training loop, evaluation, metrics, data);
- the **data fingerprint**: a SHA-256 of the decoded images and labels, never the path they were
  read from (the same zip reached through two paths is one cell; new images behind one path are
  another).
"""
from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import io
import sys
import tokenize
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

RESULTS_VERSION = 2  # 2: CPU training defaults to bf16 autocast (native bf16 CPUs) and channels-last
CORE_PACKAGES = frozenset({"benchbackcompat", "builtins", "abc", "typing", "pydantic"})


def source_packages(cls: type, within: type = object) -> list[str]:
    """Top-level packages of ``cls`` and of its bases that subclass ``within`` (the method base class: mixins from
    large libraries are left out), except the core (covered by RESULTS_VERSION)."""
    found = {base.__module__.split(".")[0] for base in cls.__mro__ if issubclass(base, within)}
    return sorted(found - CORE_PACKAGES)


def source_files(package: str) -> list[Path]:
    """The Python files of top-level module or package ``package`` (a single module: its one file), without its
    ``tests`` folders (a first-party method family keeps its tests beside it; they are not the method's code)."""
    module = sys.modules.get(package)
    if module is None:
        return []
    paths = getattr(module, "__path__", None)
    if paths:
        return sorted(p for root in paths for p in Path(root).rglob("*.py")
                      if not {"__pycache__", "tests"} & set(p.relative_to(root).parts))
    file = getattr(module, "__file__", None)
    return [Path(file)] if file else []


_LINE_STARTS = frozenset({tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING})


def code_text(source: str) -> str:
    """``source`` without its comments, docstrings (a string that is a whole statement), blank lines and trailing
    spaces: the text whose change changes what the code does. Spans are cut by the tokenizer's positions, so
    the result does not depend on how a Python version tokenizes the rest (f-strings differ from 3.12 on)."""
    line_offsets = [0]
    for line in source.splitlines(keepends=True):
        line_offsets.append(line_offsets[-1] + len(line))

    def span(token: tokenize.TokenInfo) -> tuple[int, int]:
        return line_offsets[token.start[0] - 1] + token.start[1], line_offsets[token.end[0] - 1] + token.end[1]

    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    cuts = [span(t) for t in tokens if t.type == tokenize.COMMENT]
    code = [t for t in tokens if t.type != tokenize.COMMENT]
    for before, token, after in zip([None, *code], code, [*code[1:], None]):
        starts_statement = before is None or before.type in _LINE_STARTS
        if token.type == tokenize.STRING and starts_statement and after is not None and after.type == tokenize.NEWLINE:
            cuts.append(span(token))
    kept, position = [], 0
    for start, end in sorted(cuts):
        kept.append(source[position:start])
        position = end
    kept.append(source[position:])
    return "\n".join(line.rstrip() for line in "".join(kept).splitlines() if line.strip()) + "\n"


def source_hash(packages: Iterable[str]) -> str:
    """SHA-256 over the names and :func:`code_text` of the packages' source files (in a stable order)."""
    digest = hashlib.sha256()
    for package in packages:
        for path in source_files(package):
            digest.update(f"{package}/{path.name}\0".encode())
            digest.update(code_text(path.read_text(encoding="utf-8")).encode())
            digest.update(b"\0")
    return digest.hexdigest()


def distribution_of(package: str) -> tuple[str, str]:
    """(name, version) of the installed distribution that provides top-level ``package``, else ("unknown", "")."""
    for entry in metadata.entry_points(group="benchbackcompat"):
        if entry.module.split(".")[0] == package and entry.dist is not None:
            return entry.dist.name, entry.dist.version
    names = metadata.packages_distributions().get(package, [])
    if names:
        return names[0], metadata.version(names[0])
    return "unknown", ""


def code_identity(cls: type, within: type = object) -> dict[str, Any]:
    """The method class's distribution(s), version(s) and source hash (see the module docstring)."""
    packages = source_packages(cls, within)
    dists = sorted({"{} {}".format(*distribution_of(p)).strip() for p in packages})
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "distribution": ", ".join(dists) or "benchbackcompat",
            "source_sha256": source_hash(packages)}


def tensor_fingerprint(tensors: Iterable[torch.Tensor | None], extra: Any = None) -> str:
    """SHA-256 of tensors' dtypes, shapes and bytes (None marks an absent tensor) plus ``repr(extra)``."""
    digest = hashlib.sha256(repr(extra).encode())
    for tensor in tensors:
        if tensor is None:
            digest.update(b"none\0")
            continue
        array = np.ascontiguousarray(tensor.detach().cpu().numpy())
        digest.update(f"{array.dtype}{array.shape}\0".encode())
        digest.update(memoryview(array).cast("B"))
    return digest.hexdigest()
