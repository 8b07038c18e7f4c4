"""The packed results store: the records of a results folder in Parquet, in parts per scenario (docs/packed-store.md).

``<root>/packed.json``                          ``{"format": "benchbackcompat packed results", "version": 2}``
``<root>/scenarios/<scenario>/<part>.parquet`` a part (``00000``, ``00001``, ...): one row per cell it adds or
                                                replaces, sorted by key, zstd-compressed; its metadata lists the keys
                                                it removes
``<root>/calibration/*.json``                   the calibration summaries, as the results folder holds them
``<root>/README.md``                            the folder's notes, as the results folder holds them

A scenario's records are its parts read in order: a later part's record of a key replaces an earlier one, a part's
removals drop the key. Packing writes part 0; appending writes one new part per scenario whose records changed (only
those records), so a store kept in git grows by about the bytes of the records a run adds. A version-1 store (one file
per scenario, ``<root>/scenarios/<scenario>.parquet``) reads as one part per scenario.

A row holds the record as ``record.json.gz`` stores it, losslessly: each top-level field is a column of its own (a
typed one when every record of the file holds a string, an integer, a float or a boolean there, else the field's JSON
text; the file's metadata names the JSON ones), ``record_fields`` their order in the record, and every per-query
outcome (``{"encoding", "n", "data"}``, base64 in the JSON) is taken out of the JSON into the ``blob_*`` columns, its
bytes binary. ``cell_curves`` holds the cell's training curves (JSON; null without). Unpacking gives back the same
JSON, so each record keeps its checksum and is checked as a record file is (``ResultStore.checked``). Files are
written atomically, with the same bytes for the same records (with the same pyarrow).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchbackcompat.errors import BenchError
from benchbackcompat.record import CellRecord
from benchbackcompat.runtime.files import outside, read_regular
from benchbackcompat.store.checkpoint import atomic_write_bytes
from benchbackcompat.store.results import ResultStore

FORMAT, VERSION = "benchbackcompat packed results", 2
READS = (1, VERSION)  # the format versions this reader takes
MANIFEST, TABLES = "packed.json", "scenarios"
METADATA = b"benchbackcompat"  # the file's key-value metadata: {"version", "json_columns", "removed"}
PART = re.compile(r"[0-9]{5,}")  # a part's file name (without ``.parquet``): its place in the scenario's sequence
STORE_COLUMNS = ("record_fields", "blob_path", "blob_encoding", "blob_n", "blob_data", "cell_curves")
BLOB = ["encoding", "n", "data"]
SCALARS = ((bool, pa.bool_()), (int, pa.int64()), (float, pa.float64()), (str, pa.string()))
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}")
KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
MAX_FILE_BYTES = 2**30  # a scenario's records: the published leaderboard's largest scenario packs to a few MB
_ABSENT = object()


@dataclass
class Cell:
    """A cell as stored: its record (the JSON of ``record.json.gz``, checksum included) and its curves (or None)."""

    record: dict[str, Any]
    curves: dict[str, Any] | None = None


def is_packed(root: Path) -> bool:
    """Whether ``root`` is a packed store (it holds ``packed.json``)."""
    return (Path(root) / MANIFEST).is_file()


def write_store(root: Path, cells: Iterable[Cell]) -> list[Path]:
    """Write ``cells`` as the packed store ``root`` (created if needed): one part per scenario (part 0), replacing
    the store's earlier parts and version-1 files (an unchanged part 0 keeps its bytes); returns the files written."""
    folder = _tables_folder(root)
    folder.mkdir(parents=True, exist_ok=True)
    written = [_write_part(folder / name / _part_file(0), group, [])
               for name, group in sorted(_by_scenario(cells).items())]
    _write_manifest(root)
    for path in (set(folder.glob("*.parquet")) | set(folder.glob("*/*.parquet"))) - set(written):
        path.unlink()
    for directory in folder.iterdir():
        if directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()
    return written


def append_store(root: Path, cells: Iterable[Cell]) -> tuple[int, int, list[Path]]:
    """Make the packed store ``root`` (version 2) hold exactly ``cells`` by appending to each scenario whose records
    differ a part with its new or changed cells (by key, record checksum and curves) and the keys it no longer holds;
    returns (cells written, keys removed, parts written)."""
    if check_manifest(root) != VERSION:
        raise BenchError(f"{root} is a packed store of format version 1 (one file per scenario), which takes no parts; "
                         f"`benchbackcompat pack {root} --compact` rewrites it as version {VERSION}, then append")
    folder = _tables_folder(root)
    held = {name: _fold(parts) for name, parts in _scenario_parts(root, VERSION)}
    by_name, new, removed, written = _by_scenario(cells), 0, 0, []
    for name in sorted(by_name.keys() | held.keys()):
        old = {ident: cell for ident, (_, cell) in held.get(name, {}).items()}
        ids = {_json(cell.record.get("key")): cell for cell in by_name.get(name, [])}
        changed = [cell for ident, cell in ids.items()
                   if ident not in old or _fingerprint(old[ident]) != _fingerprint(cell)]
        gone = [old[ident].record.get("key") for ident in sorted(old.keys() - ids.keys())]
        if changed or gone:
            number = 1 + max((int(p.stem) for p in _parts(folder / name)), default=-1)
            written.append(_write_part(folder / name / _part_file(number), changed, gone))
            new, removed = new + len(changed), removed + len(gone)
    return new, removed, written


def _by_scenario(cells: Iterable[Cell]) -> dict[str, list[Cell]]:
    by_name: dict[str, list[Cell]] = {}
    for cell in cells:
        by_name.setdefault(file_name(cell.record.get("scenario")), []).append(cell)
    return by_name


def _fingerprint(cell: Cell) -> tuple[Any, str]:
    """What tells a changed cell from its stored one: the record's checksum and the curves."""
    return cell.record.get("sha256"), _json(cell.curves)


def _write_part(path: Path, cells: list[Cell], removed: list[Any]) -> Path:
    """Write one part (``cells`` sorted by key, the keys it removes) atomically unless it holds those bytes already."""
    data = table_bytes(sorted(cells, key=lambda c: str(c.record.get("key"))), removed)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_bytes() != data:
        atomic_write_bytes(path, data)
    return path


def _write_manifest(root: Path) -> None:
    atomic_write_bytes(Path(root) / MANIFEST, (json.dumps({"format": FORMAT, "version": VERSION}) + "\n").encode())


def _part_file(number: int) -> str:
    return f"{number:05d}.parquet"


def _parts(directory: Path) -> list[Path]:
    """A scenario's parts, in order."""
    return sorted((p for p in directory.glob("*.parquet") if PART.fullmatch(p.stem)), key=lambda p: int(p.stem))


def _tables_folder(root: Path, scenario: str | None = None) -> Path:
    """``root/scenarios`` (or a scenario's folder in it), refused in one line when it resolves outside the store (a
    planted link)."""
    folder = Path(root) / TABLES / (scenario or "")
    if (real := outside(root, folder)) is not None:
        raise BenchError(f"{folder} resolves to {real}, outside the packed store {root}; refusing to read or write "
                         "through it: replace the link with a folder")
    return folder


def file_name(scenario: Any) -> str:
    """The file name (without ``.parquet``) of a scenario's records: its name, or a hash of an odd one."""
    text = str(scenario)
    return text if FILE_NAME.fullmatch(text) else "scenario-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def table_bytes(cells: list[Cell], removed: list[Any] | None = None) -> bytes:
    """The Parquet file of ``cells`` (one row each, in order) and the keys it removes."""
    skeletons, blobs = zip(*(_take_blobs(cell.record) for cell in cells)) if cells else ((), ())
    names = list(dict.fromkeys(name for skeleton in skeletons for name in skeleton))
    if taken := [name for name in names if name in STORE_COLUMNS]:
        raise BenchError(f"a record holds a field named {taken[0]!r}, a column name the packed store keeps for itself; "
                         "rename the field")
    columns: dict[str, pa.Array] = {"record_fields": pa.array([list(s) for s in skeletons], pa.list_(pa.string()))}
    json_columns = []
    for name in names:
        columns[name], holds_json = _column([s.get(name, _ABSENT) for s in skeletons])
        if holds_json:
            json_columns.append(name)
    columns["blob_path"] = pa.array([[json.dumps(p) for p, _ in b] for b in blobs], pa.list_(pa.string()))
    columns["blob_encoding"] = pa.array([[v["encoding"] for _, v in b] for b in blobs], pa.list_(pa.string()))
    columns["blob_n"] = pa.array([[v["n"] for _, v in b] for b in blobs], pa.list_(pa.int64()))
    columns["blob_data"] = pa.array([[base64.b64decode(v["data"]) for _, v in b] for b in blobs], pa.list_(pa.binary()))
    columns["cell_curves"] = pa.array([None if c.curves is None else _json(c.curves) for c in cells], pa.string())
    info = {"version": VERSION, "json_columns": json_columns, "removed": list(removed or [])}
    metadata = {METADATA: json.dumps(info).encode()}
    sink = io.BytesIO()
    # no column statistics: a binary column's would repeat its smallest and largest value (a part of one record
    # would hold its per-query outcomes about twice)
    pq.write_table(pa.table(columns).replace_schema_metadata(metadata), sink, compression="zstd",
                   compression_level=19, write_statistics=False)
    return sink.getvalue()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _column(values: list[Any]) -> tuple[pa.Array, bool]:
    """A column of one field's values (``_ABSENT``: the record lacks it) and whether it holds JSON text."""
    present = [v for v in values if v is not _ABSENT]
    for kind, arrow in SCALARS:
        if all(type(v) is kind for v in present):
            try:
                return pa.array([None if v is _ABSENT else v for v in values], arrow), False
            except (OverflowError, pa.ArrowException):  # an integer beyond 64 bits: kept as JSON
                break
    return pa.array([None if v is _ABSENT else _json(v) for v in values], pa.string()), True


def _take_blobs(record: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[list[Any], dict[str, Any]]]]:
    """(``record`` with each per-query outcome replaced by null, the outcomes with their paths in it)."""
    found: list[tuple[list[Any], dict[str, Any]]] = []

    def strip(value: Any, path: list[Any]) -> Any:
        if isinstance(value, dict):
            if _is_blob(value):
                found.append((path, value))
                return None
            return {k: strip(v, [*path, k]) for k, v in value.items()}
        if isinstance(value, list):
            return [strip(v, [*path, i]) for i, v in enumerate(value)]
        return value

    return {k: strip(v, [k]) for k, v in record.items()}, found


def _is_blob(value: dict[str, Any]) -> bool:
    """A per-query outcome that its bytes give back exactly (canonical base64, keys in the encoder's order)."""
    if list(value) != BLOB or not isinstance(value["encoding"], str) or type(value["n"]) is not int:
        return False
    data = value["data"]
    try:
        return isinstance(data, str) and base64.b64encode(base64.b64decode(data, validate=True)).decode() == data
    except (binascii.Error, ValueError):
        return False


def read_store(root: Path) -> Iterator[tuple[Path, Cell]]:
    """Each cell the packed store ``root`` holds (its parts read in order: a later part's record of a key replaces
    an earlier one, removals apply), sorted by key per scenario, with the part holding it; a BenchError (one line)
    for a store of an unknown format version or a file that is not one of its tables."""
    for _, parts in _scenario_parts(root, check_manifest(root)):
        yield from sorted(_fold(parts).values(), key=lambda held: str(held[1].record.get("key")))


def _scenario_parts(root: Path, version: int) -> list[tuple[str, list[Path]]]:
    """(file name, its parts in order) of each scenario of a store of format ``version``."""
    folder = _tables_folder(root)
    if version == 1:
        return [(path.stem, [path]) for path in sorted(folder.glob("*.parquet"))]
    names = sorted(path.name for path in folder.iterdir() if path.is_dir()) if folder.is_dir() else []
    return [(name, _parts(_tables_folder(root, name))) for name in names]


def _fold(parts: list[Path]) -> dict[str, tuple[Path, Cell]]:
    """A scenario's cells by key (as JSON text) with the part holding each: its parts applied in order."""
    held: dict[str, tuple[Path, Cell]] = {}
    for path in parts:
        cells, removed = read_table(path)
        for key in removed:
            held.pop(_json(key), None)
        held.update((_json(cell.record.get("key")), (path, cell)) for cell in cells)
    return held


def check_manifest(root: Path) -> int:
    """The format version of the packed store ``root``; refused (one line) when its ``packed.json`` is not this
    format's or of a version this reader does not take."""
    path = Path(root) / MANIFEST
    try:
        manifest = json.loads(read_regular(path, 2**16))
    except (OSError, ValueError, RecursionError) as error:
        raise BenchError(f"{path} cannot be read ({error}); a packed store's manifest is {{\"format\": {FORMAT!r}, "
                         f"\"version\": {VERSION}}}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BenchError(f"{path} is not a packed store's manifest (its format is not {FORMAT!r})")
    if manifest.get("version") not in READS:
        raise BenchError(f"{root} is a packed store of format version {manifest.get('version')!r}; this benchbackcompat "
                         f"reads versions {READS[0]} to {VERSION}: install the version that wrote it")
    return int(manifest["version"])


def read_table(path: Path) -> tuple[list[Cell], list[Any]]:
    """The cells of one table file, as they were written, and the keys it removes."""
    try:
        table = pq.read_table(io.BytesIO(read_regular(path, MAX_FILE_BYTES)))
        info = json.loads((table.schema.metadata or {})[METADATA])
    except (OSError, ValueError, KeyError, pa.ArrowException) as error:
        raise BenchError(f"{path} is not a table of a packed store ({str(error).splitlines()[0]}); pack the results "
                         "folder again with `benchbackcompat pack`") from None
    if not isinstance(info, dict) or info.get("version") not in READS or not isinstance(info.get("removed", []), list):
        version = info.get("version") if isinstance(info, dict) else None
        raise BenchError(f"{path} is of packed format version {version!r}; this benchbackcompat reads versions "
                         f"{READS[0]} to {VERSION}")
    json_columns = set(info.get("json_columns", []))
    cells = []
    for number, row in enumerate(table.to_pylist()):
        try:
            cells.append(_cell(row, json_columns))
        except (KeyError, IndexError, TypeError, ValueError, RecursionError) as error:
            raise BenchError(f"{path} row {number} is damaged ({type(error).__name__}: {error}); pack the results "
                             "folder again with `benchbackcompat pack`") from None
    return cells, info.get("removed", [])


def _cell(row: dict[str, Any], json_columns: set[str]) -> Cell:
    """A row of a table file as the cell it was written from."""
    record = {name: json.loads(row[name]) if name in json_columns else row[name] for name in row["record_fields"]}
    for path_text, encoding, n, data in zip(row["blob_path"], row["blob_encoding"], row["blob_n"], row["blob_data"],
                                            strict=True):
        *parents, last = json.loads(path_text)
        where = record
        for step in parents:
            where = where[step]
        where[last] = {"encoding": encoding, "n": n, "data": base64.b64encode(data).decode("ascii")}
    curves = row["cell_curves"]
    return Cell(record, None if curves is None else json.loads(curves))


def packed_records(root: Path) -> Iterator[CellRecord]:
    """The usable records of the packed store ``root``, each checked as a record file is (``ResultStore.checked``:
    checksum, format, consistency; an unusable one is reported once and left out)."""
    checker = ResultStore(root)
    for path, cell in read_store(root):
        key = cell.record.get("key")
        where = path / str(key)  # the cell's row, named in reports
        if not isinstance(key, str) or not KEY.fullmatch(key):
            checker.checked("", None, where)
            continue
        record = checker.checked(key, cell.record, where)
        if record is not None:
            yield record
