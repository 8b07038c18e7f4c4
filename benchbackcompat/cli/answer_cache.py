"""Answers of ``list methods`` and ``describe``, kept between calls.

Both must import every plugin, and the plugins import torch: seconds for a table that changes only when
the code does. An answer is stored under a key made of the question, the installed methods' entry points
(name, module, distribution and version) and the content of any input file (the preset ``describe`` reads).
Beside the answer, the entry keeps a content digest of every file of the code it came from: the core, the
plugins' top-level packages (their data files included) and every other package imported while answering
that lies outside the standard library and site-packages (a helper package on the path, an editable
install). An answer whose code changed is asked again, whatever the files' sizes and times say; an entry
that cannot be read is discarded and asked again. Nothing here imports torch.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import importlib.util
import json
import site
import sys
import sysconfig
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

GROUP = "benchbackcompat"  # the plugins' entry-point group (plugin_host.GROUP, which imports torch)
CORE = Path(__file__).parents[1]  # the benchbackcompat package


def tree_files(roots: Iterable[Path]) -> list[Path]:
    """Every file under ``roots`` (a root may be one file), byte-code caches left out."""
    found = []
    for root in roots:
        if root.is_file():
            found.append(root)
        else:
            found += [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return sorted(found)


def package_files(package: str) -> list[Path]:
    """All files of top-level package (or module) ``package``, data files included, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return tree_files(Path(root) for root in spec.submodule_search_locations)
    return [Path(spec.origin)] if spec.origin and Path(spec.origin).is_file() else []


def digest(paths: Iterable[Path]) -> dict[str, str]:
    """{path: BLAKE2b digest of its content} of each readable file."""
    found = {}
    for path in paths:
        try:
            found[str(path)] = hashlib.blake2b(Path(path).read_bytes(), digest_size=16).hexdigest()
        except OSError:
            continue
    return found


def entry_points() -> list[tuple[str, str, str, str]]:
    """(name, module, distribution, version) of each installed method."""
    return sorted((e.name, e.value, e.dist.name if e.dist else "", e.dist.version if e.dist else "")
                  for e in metadata.entry_points(group=GROUP))


def plugin_code() -> list[Path]:
    """The files of the core and of the plugins' top-level packages, as they are now."""
    packages = sorted({value.split(":")[0].split(".")[0] for _, value, _, _ in entry_points()})
    return tree_files([CORE]) + [p for package in packages for p in package_files(package)]


def imported_local_code() -> list[Path]:
    """The files of the imported top-level packages that lie outside the standard library and site-packages."""
    paths = sysconfig.get_paths()
    outside = [Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    outside += [Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages()]]
    roots: set[Path] = set()
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        if "." in name or name in sys.stdlib_module_names or spec is None:
            continue
        if not (spec.submodule_search_locations or spec.has_location and spec.origin):
            continue
        for root in spec.submodule_search_locations or [spec.origin]:
            root = Path(root).resolve()
            if not any(root.is_relative_to(o) for o in outside):
                roots.add(root)
    return tree_files(sorted(roots))


def read_entry(path: Path) -> dict | None:
    """The stored entry at ``path``: its answer and code digests; None (and the file discarded) if unreadable."""
    try:
        entry = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError, MemoryError):  # not UTF-8, not JSON, nested too deeply, too large
        entry = None
    if (isinstance(entry, dict) and isinstance(entry.get("text"), str) and isinstance(entry.get("code"), dict)
            and all(isinstance(v, str) for v in entry["code"].values())):
        return entry
    try:
        path.unlink()
    except OSError:
        pass
    return None


def cached_answer(cache_dir: Path, question: Sequence[str], answer: Callable[[], tuple[str, bool]],
                  inputs: Sequence[Path] = ()) -> str:
    """The stored answer to ``question`` while its code is unchanged, or ``answer()``'s text, stored when it says
    it may be (an answer that reports a broken plugin is not stored, so that it is asked again)."""
    contents = [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in inputs]
    key = hashlib.sha256(json.dumps([list(question), entry_points(), contents]).encode()).hexdigest()[:24]
    path = Path(cache_dir) / "answers" / f"{key}.json"
    entry = read_entry(path)
    if entry is not None and digest(sorted({*map(Path, entry["code"]), *plugin_code()})) == entry["code"]:
        return entry["text"]
    text, storable = answer()
    if storable:
        code = digest(sorted({*plugin_code(), *imported_local_code()}))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".tmp")
            partial.write_text(json.dumps({"code": code, "text": text}), encoding="utf-8")
            partial.replace(path)
        except OSError:  # a read-only cache only costs the next call its time
            pass
    return text


def default_cache_dir() -> Path:
    """Where answers are kept: beside the dataset cache (``RunConfig.cache_dir``'s default)."""
    return Path.home() / ".cache" / "benchbackcompat"
