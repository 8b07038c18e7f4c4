"""Which files of a leaderboard folder the renderer wrote, so that a new rendering replaces and removes only those.

A rendering leaves a manifest, ``.leaderboard-files.json``: its generator's name and every file it wrote. A folder is
rendered into only when it holds such a manifest, when it is empty (results folders and packed stores kept inside it
aside), or when it is a rendering of a version from before manifests (recognised by its ``leaderboard.json``, whose
files are found as that version named them); any other folder (a docs folder, a home folder) is refused in one line, and no file that a
rendering cannot prove it wrote is replaced or deleted. The manifest is rewritten to name the earlier and the new
files before the new ones are moved in, and to name the new ones only after the earlier ones are removed, so a
rendering killed in between leaves nothing the next one does not know it wrote.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.files import read_regular
from benchbackcompat.store.checkpoint import atomic_write_bytes
from benchbackcompat.store.columnar import is_packed

MANIFEST = ".leaderboard-files.json"
GENERATOR = "benchbackcompat leaderboard"
MAX_MANIFEST_BYTES = 16 * 2**20  # a rendering of thousands of figures names them in well under a megabyte


def owned_files(out: Path, legacy: Callable[[Path], set[Path]], stage_prefix: str) -> set[Path]:
    """The files (relative to ``out``) an earlier rendering wrote there: those its manifest names, ``legacy(out)`` for
    a rendering from before manifests, none for an empty or new folder; a BenchError for any other folder."""
    named = read_manifest(out)
    if named is not None:
        return named
    foreign = [entry.name for entry in sorted(out.iterdir()) if not entry.name.startswith(stage_prefix)
               and not (entry.is_dir() and not entry.is_symlink() and ((entry / "cells").is_dir() or is_packed(entry)))]
    if not foreign:
        return set()
    if legacy_rendering(out):
        return legacy(out)
    shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
    raise BenchError(f"{out} holds files that no leaderboard rendering wrote ({shown}); refusing to render into it: "
                     "give --out an empty or new folder, or the folder of an earlier rendering")


def read_manifest(out: Path) -> set[Path] | None:
    """The files ``out``'s manifest names (those that are plain relative paths), or None without one of ours."""
    try:
        data = json.loads(read_regular(out / MANIFEST, MAX_MANIFEST_BYTES, follow=False))
    except (OSError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(data, dict) or data.get("generator") != GENERATOR or not isinstance(data.get("files"), list):
        return None
    return {Path(name) for name in data["files"] if isinstance(name, str) and plain_relative(name)}


def write_manifest(out: Path, files: Iterable[Path]) -> None:
    """Name ``files`` (relative to ``out``) as this renderer's, atomically."""
    names = sorted({PurePosixPath(*Path(f).parts).as_posix() for f in files})
    atomic_write_bytes(out / MANIFEST, (json.dumps({"generator": GENERATOR, "files": names}, indent=0) + "\n").encode())


def legacy_rendering(out: Path) -> bool:
    """Whether ``out`` holds the ``leaderboard.json`` a rendering from before manifests wrote: provenance naming this
    package's version, and the tables."""
    try:
        data = json.loads(read_regular(out / "leaderboard.json", 256 * 2**20, follow=False))
    except (OSError, ValueError, RecursionError, MemoryError):
        return False
    return (isinstance(data, dict) and set(data) == {"provenance", "tables"} and isinstance(data["tables"], list)
            and isinstance(data["provenance"], dict) and "benchbackcompat" in data["provenance"])


def plain_relative(name: str) -> bool:
    """Whether ``name`` is a relative path that stays inside its folder (no ``..``, not absolute)."""
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts and "\\" not in name


def check_no_clash(out: Path, rendered: Iterable[Path], owned: set[Path]) -> None:
    """Refuse to replace a file (or link) in ``out`` that the earlier rendering did not write."""
    clash = sorted(name for name in rendered if name not in owned and ((out / name).exists() or (out / name).is_symlink()))
    if clash:
        raise BenchError(f"{out / clash[0]} was not written by a leaderboard rendering; refusing to replace it: move it "
                         "away, or render into another folder")
