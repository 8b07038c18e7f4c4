"""Answers of ``list methods`` and ``describe``, kept between calls.

Both must import every plugin, and the plugins import torch: seconds for a table that changes only when
the installed code does. An answer is stored under a key made of the question, the installed methods'
entry points (name, module, distribution and version), the size and modification time of every file of
their packages and of the core, and the content of any input file (the preset ``describe`` reads). Any
change there asks the plugins again; nothing here imports torch.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import importlib.util
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

GROUP = "benchbackcompat"  # the plugins' entry-point group (plugin_host.GROUP, which imports torch)
CORE = Path(__file__).parents[1]  # the benchbackcompat package


def package_files(package: str) -> list[Path]:
    """The Python files of top-level package (or module) ``package``, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return sorted(p for root in spec.submodule_search_locations for p in Path(root).rglob("*.py"))
    return [Path(spec.origin)] if spec.origin else []


def stamp(paths: Iterable[Path]) -> list[tuple[str, int, int]]:
    """(path, size, modification time in ns) of each existing file."""
    found = []
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            continue
        found.append((str(path), info.st_size, info.st_mtime_ns))
    return found


def installed_code() -> list:
    """What the plugins' answers depend on: their entry points and the files of their packages and of the core."""
    entries = sorted((e.name, e.value, e.dist.name if e.dist else "", e.dist.version if e.dist else "")
                     for e in metadata.entry_points(group=GROUP))
    packages = sorted({value.split(":")[0].split(".")[0] for _, value, _, _ in entries})
    return [entries, stamp(p for package in packages for p in package_files(package)), stamp(sorted(CORE.rglob("*.py")))]


def cached_answer(cache_dir: Path, question: Sequence[str], answer: Callable[[], tuple[str, bool]],
                  inputs: Sequence[Path] = ()) -> str:
    """The stored answer to ``question``, or ``answer()``'s text, stored when it says it may be (an answer that
    reports a broken plugin is not stored, so that it is asked again)."""
    contents = [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in inputs]
    key = hashlib.sha256(json.dumps([list(question), installed_code(), contents]).encode()).hexdigest()[:24]
    path = Path(cache_dir) / "answers" / f"{key}.txt"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    text, storable = answer()
    if storable:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".tmp")
            partial.write_text(text, encoding="utf-8")
            partial.replace(path)
        except OSError:  # a read-only cache only costs the next call its time
            pass
    return text


def default_cache_dir() -> Path:
    """Where answers are kept: beside the dataset cache (``RunConfig.cache_dir``'s default)."""
    return Path.home() / ".cache" / "benchbackcompat"

