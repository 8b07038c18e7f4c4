"""A results folder packed into a packed store (``store.columnar``) and back: ``benchbackcompat pack`` (``--append``,
``--compact``) and ``unpack``.

Packing takes every record the results folder's store accepts (an unusable one is reported and left out), its
training curves, the calibration summaries and the folder's README.md; models, saved steps and queued cells stay
behind (a packed store holds what the pages read). Appending a results folder to a store writes only the records that
differ from the store's (a new part per scenario); compacting rewrites a store as one part per scenario. Unpacking
writes each record back as ``cells/<key>/record.json.gz`` with the JSON it was packed from, so the store reads it as
before.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchbackcompat.errors import BenchError
from benchbackcompat.record import CellRecord
from benchbackcompat.store.columnar import (KEY, Cell, append_store, is_packed, packed_records, read_store,
                                             write_store)
from benchbackcompat.store.packed import read_json, stored_file, write_packed
from benchbackcompat.store.results import CURVES, RECORD, ResultStore

CALIBRATION = "calibration"  # the calibration summaries (``report.calibration``), copied as they are
NOTES = "README.md"  # the folder's notes, copied as they are


def results_kind(root: Path) -> str:
    """``"packed"`` for a packed store, ``"folder"`` for a results folder (with ``cells/``); else a one-line error."""
    if is_packed(root):
        return "packed"
    if (Path(root) / "cells").is_dir():
        return "folder"
    raise BenchError(f"no results in {root}: neither a results folder (no cells/ folder) nor a packed store (no "
                     f"packed.json); run `benchbackcompat run --out {root}` first, or pass a store that "
                     "`benchbackcompat pack` wrote")


def stored_records(root: Path) -> Iterator[CellRecord]:
    """The usable records of a results folder or a packed store (told apart by :func:`results_kind`)."""
    return packed_records(root) if results_kind(root) == "packed" else ResultStore(root).records()


@contextmanager
def results_folder(root: Path) -> Iterator[Path]:
    """``root`` as a results folder: itself, or a packed store unpacked into a temporary folder (removed on exit), for
    the commands that read a folder's cells one by one (``status``, ``show``)."""
    if results_kind(root) == "folder":
        yield Path(root)
        return
    with tempfile.TemporaryDirectory(prefix="bbc-unpacked-") as folder:
        unpack(root, Path(folder))
        yield Path(folder)


def pack(results: Path, out: Path) -> tuple[int, int]:
    """Write results folder ``results`` as the packed store ``out``; returns (records packed, record files left out
    as unusable)."""
    cells, left_out = _cells(results)
    write_store(out, cells)
    _copy_beside(results, out)
    return len(cells), left_out


def append(results: Path, store: Path) -> tuple[int, int, int, int]:
    """Make the packed store ``store`` hold what results folder ``results`` holds by appending a part per scenario
    whose records differ (the new or changed records, the keys removed); returns (records written, records removed,
    parts written, record files left out as unusable)."""
    cells, left_out = _cells(results)
    written, removed, parts = append_store(store, cells)
    _copy_beside(results, store)
    return written, removed, len(parts), left_out


def compact(store: Path) -> int:
    """Rewrite the packed store ``store`` as one part per scenario (format version 2); returns the records it holds."""
    cells = [cell for _, cell in read_store(store)]
    write_store(store, cells)
    return len(cells)


def _cells(results: Path) -> tuple[list[Cell], int]:
    """The cells of results folder ``results`` whose records its store accepts, and the record files left out."""
    store = ResultStore(results)
    cells, left_out = [], 0
    for key in store.keys():
        folder = store.cell_dir(key)
        record = store.stored_record(key)
        if record is None:
            left_out += stored_file(folder, RECORD) is not None
            continue
        curves_file = stored_file(folder, CURVES)
        cells.append(Cell(record, read_json(curves_file) if curves_file is not None else None))
    return cells, left_out


def unpack(packed: Path, out: Path) -> int:
    """Write the packed store ``packed`` as the results folder ``out``; returns the records written."""
    store, written = ResultStore(out), 0
    for path, cell in read_store(packed):
        key = cell.record.get("key")
        if not isinstance(key, str) or not KEY.fullmatch(key):
            raise BenchError(f"{path} holds a record whose key {key!r} is not a cell folder's name; pack the results "
                             "folder again with `benchbackcompat pack`")
        folder = store.cell_dir(key)
        folder.mkdir(parents=True, exist_ok=True)
        if cell.curves is not None:
            write_packed(folder, CURVES, json.dumps(cell.curves, separators=(",", ":")))
        write_packed(folder, RECORD, json.dumps(cell.record, indent=1))
        written += 1
    _copy_beside(packed, out)
    return written


def _copy_beside(source: Path, out: Path) -> None:
    """Make ``out`` hold what ``source`` keeps beside its records, as it is: the calibration summaries and the folder's
    README.md (its notes, which a leaderboard index that keeps the folder quotes); ``out``'s others are removed."""
    files = sorted(p for p in (Path(source) / CALIBRATION).glob("*.json") if p.is_file() and not p.is_symlink())
    if files:
        (Path(out) / CALIBRATION).mkdir(parents=True, exist_ok=True)
    notes = Path(source) / NOTES
    kept = [*files, *([notes] if notes.is_file() and not notes.is_symlink() else [])]
    for path in kept:
        shutil.copyfile(path, Path(out) / path.relative_to(source))
    held = [*(Path(out) / CALIBRATION).glob("*.json"), Path(out) / NOTES]
    for path in {p.relative_to(out) for p in held if p.is_file()} - {p.relative_to(source) for p in kept}:
        (Path(out) / path).unlink()


def check_output(out: Path) -> None:
    """Refuse (one line) an output that exists and is not an empty folder."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BenchError(f"{out} exists and is not an empty folder; give a new or empty output folder")
