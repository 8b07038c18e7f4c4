"""The results directory.

``<out>/cells/<key>/record.json.gz`` one record per (scenario, method, seed, configuration), written atomically
``<out>/cells/<key>/curves.json.gz`` its training curves (step index -> per-epoch values), written before the record
``<out>/cells/<key>/cell.json``     the planned cell (label, method, code and data identity), written when it is queued
``<out>/cells/<key>/step-<t>.pt``   the cell's finished steps, to resume an interrupted cell
``<out>/cells/<key>/timed-out.json`` the run in which the cell last timed out, so that its other workers skip it
``<out>/models/<key>.pt``          models shared between cells (standard old models, references, pretrained models)
``<out>/locks/``                   advisory locks: several processes may run on one results directory at once

Records and curves are gzip-compressed JSON (``store.packed``); the plain ``record.json`` and ``curves.json`` that
earlier versions wrote are read as well.

A results folder may be shared, so it is a trust boundary: every folder the store reads, writes, sweeps or locks in
is resolved and refused (one line) when it leads outside the folder, files are replaced atomically (never written
through a link) and only regular files are read, each up to a bound. A stored file that cannot be parsed, whatever
the reason (damaged, nested too deeply for the parser, too large to hold), is reported once and its cell recomputed.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchbackcompat.errors import BenchError
from benchbackcompat.store.checkpoint import atomic_write_bytes, checksum_path, load_checkpoint, log, save_checkpoint
from benchbackcompat.store.locks import file_lock, process_running
from benchbackcompat.store.packed import OversizedFile, packed_name, read_json, stored_file, write_packed
from benchbackcompat.record import CellRecord, FinishedRecord, RecordBase, ValidationError, parse_record
from benchbackcompat.runtime.files import outside, read_regular
from benchbackcompat.store.verify import contradiction

RECORD_FORMAT = 1
RECORD, CURVES = "record.json", "curves.json"  # stored as RECORD.gz and CURVES.gz (older folders: plain)
TIMED_OUT = "timed-out.json"
TRACEBACK = "traceback.txt"
MAX_ENTRY_BYTES = 2**20  # cell.json and timed-out.json: a cell's label, identity and one failed record (a few KB)
UNPARSABLE = (OSError, ValueError, RecursionError, MemoryError)  # a stored file that cannot be read or parsed


class ResultStore:
    def __init__(self, root: Path, lock_timeout: float | None = None) -> None:
        self.root = Path(root)
        self.lock_timeout = lock_timeout  # seconds to wait for another process's lock (None: as long as it takes)
        self.reported: set[Path] = set()

    def cell_dir(self, key: str) -> Path:
        """The folder of cell ``key``; one that resolves outside the results folder (a link out of it) is refused,
        so that nothing is written, read or deleted through it."""
        return self.inside(self.root / "cells" / key, "cell folder")

    def inside(self, folder: Path, what: str) -> Path:
        """``folder`` of the results folder, refused in one line when it resolves outside it (a planted link)."""
        real = outside(self.root, folder)
        if real is not None:
            raise BenchError(f"{what} {folder} resolves to {real}, outside the results folder {self.root}; "
                             "refusing to write, read or delete through it: replace the link with a folder")
        return folder

    def record_path(self, key: str) -> Path:
        """Where ``write_record`` writes the record of cell ``key``."""
        return self.cell_dir(key) / packed_name(RECORD)

    def record(self, key: str) -> CellRecord | None:
        """The finished record of a cell, or None: missing, or unusable (unreadable, another format, not
        matching the checksum recorded at write time, malformed, or contradicting itself: ``store.verify``;
        reported once), so that the cell is recomputed."""
        path = stored_file(self.cell_dir(key), RECORD)
        if path is None:
            return None
        try:
            return self._checked_record(key, path)
        except (RecursionError, MemoryError) as error:  # nested too deeply for the parsers, or too large to hold
            self._report(path, f"result {path} cannot be read ({type(error).__name__}); ignoring it (a run "
                               "recomputes the cell)")
            return None

    def _checked_record(self, key: str, path: Path) -> CellRecord | None:
        try:
            record = read_json(path)
        except OversizedFile as error:
            self._report(path, f"{error}; ignoring it, unread (a run recomputes the cell)")
            return None
        except (OSError, ValueError):
            record = None
        return self.checked(key, record, path)

    def stored_record(self, key: str) -> dict[str, Any] | None:
        """The record of cell ``key`` in its stored form (its JSON, checksum included) when :meth:`record` accepts
        it, else None (unusable ones reported once)."""
        path = stored_file(self.cell_dir(key), RECORD)
        try:
            stored = read_json(path) if path is not None else None
        except UNPARSABLE:
            stored = None
        if not isinstance(stored, dict) or self.record(key) is None:
            return None
        return stored

    def checked(self, key: str, record: Any, path: Path) -> CellRecord | None:
        """``record``, the stored JSON of cell ``key`` read from ``path``, parsed; None when unusable (another format,
        not matching its checksum, of another cell, malformed, or contradicting itself: ``store.verify``; reported
        once, so that the cell is recomputed). Pops its ``sha256``."""
        stored = record.pop("sha256", None) if isinstance(record, dict) else None
        intact = isinstance(record, dict) and stored == record_checksum(record)
        if intact and record.get("format") == RECORD_FORMAT:
            if record.get("key") != key:
                self._report(path, f"result {path} belongs to cell {record.get('key')!r}, not to its folder {key!r} "
                                   "(copied?); ignoring it (a run recomputes the cell)")
                return None
            try:
                parsed = parse_record(record)
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(str(p) for p in first["loc"][1:])  # without the status tag
                self._report(path, f"skipping a malformed record in {self.root} (cell {key[:40]!r}): "
                                   f"{f'{where}: ' if where else ''}{first['msg']}".replace("\n", " "))
                return None
            problem = contradiction(parsed) if isinstance(parsed, FinishedRecord) else None
            if problem is not None:
                self._report(path, f"skipping record {path}: {problem} (edited after it was written?); ignoring it "
                                   "(a run recomputes the cell)".replace("\n", " "))
                return None
            return parsed
        problem = "does not match its checksum (truncated or corrupted)" if isinstance(record, dict) else "cannot be read"
        self._report(path, f"result {path} {problem}; ignoring it (a run recomputes the cell)")
        return None

    def _report(self, path: Path, message: str) -> None:
        if path not in self.reported:
            self.reported.add(path)
            log.warning(message)

    def write_record(self, key: str, record: RecordBase | dict[str, Any]) -> Path:
        """Write the record atomically, gzip-compressed (``record.json.gz``), with the SHA-256 of its JSON content
        (``sha256``), as strict JSON: NaN and Inf (not valid JSON) are written as null, which every reader takes as
        "not computable". A dict is written as given (the stored form, e.g. a record written by other code). The
        training curves (``curves``, step index -> per-epoch values) go to ``curves.json.gz`` beside it: no page
        reads them, and they were most of a record's bytes."""
        folder = self.cell_dir(key)
        content = dict(record.to_json() if isinstance(record, RecordBase) else record)
        curves = content.pop("curves", None)
        if curves:
            write_packed(folder, CURVES, json.dumps(strict_json(curves), separators=(",", ":"), allow_nan=False))
        payload = json.loads(json.dumps(strict_json({"format": RECORD_FORMAT, **content}), default=str, allow_nan=False))
        payload["sha256"] = record_checksum(payload)
        return write_packed(folder, RECORD, json.dumps(payload, indent=1, allow_nan=False))

    def curves(self, key: str) -> dict[str, list[dict[str, Any]]]:
        """A cell's training curves, step index -> per-epoch values (``{}`` when none were stored); records written
        before the curves had their own file hold them inline, and are read there."""
        for name, field in ((CURVES, None), (RECORD, "curves")):
            path = stored_file(self.cell_dir(key), name)
            if path is None:
                continue
            try:
                data = read_json(path)
            except UNPARSABLE as error:
                self._report(path, f"training curves {path} cannot be read ({type(error).__name__}); ignoring them")
                continue
            found = data.get(field) if field and isinstance(data, dict) else data
            if isinstance(found, dict):
                return found
        return {}

    def write_cell_entry(self, key: str, entry: dict[str, Any]) -> None:
        """Note a queued cell (``cell.json``), so that ``status`` can list it before it has a result."""
        atomic_write_bytes(self.cell_dir(key) / "cell.json", json.dumps({"key": key, **entry}, indent=1).encode())

    def cell_entry(self, key: str) -> dict[str, Any] | None:
        """The queued cell's ``cell.json``, or None: missing, or unusable (reported once; a run writes it again)."""
        path = self.cell_dir(key) / "cell.json"
        try:
            entry = json.loads(read_regular(path, MAX_ENTRY_BYTES))
        except FileNotFoundError:
            return None
        except UNPARSABLE as error:
            self._report(path, f"cell entry {path} cannot be read ({type(error).__name__}); ignoring it")
            return None
        return entry if isinstance(entry, dict) else None

    def note_timeout(self, key: str, run: str, record: RecordBase) -> None:
        """Note that cell ``key`` timed out in run ``run`` with failed ``record`` (not a result: a later run retries
        the cell), so that the other processes of that run do not retry it."""
        note = json.dumps({"run": run, "record": record.to_json()}, default=str)
        atomic_write_bytes(self.cell_dir(key) / TIMED_OUT, note.encode())

    def timed_out_in(self, key: str, run: str) -> CellRecord | None:
        """The failed record of cell ``key`` if it timed out in run ``run``, else None."""
        try:
            note = json.loads(read_regular(self.cell_dir(key) / TIMED_OUT, MAX_ENTRY_BYTES))
            return parse_record(note["record"]) if isinstance(note, dict) and note.get("run") == run else None
        except (*UNPARSABLE, KeyError, TypeError):  # json and pydantic errors are ValueErrors
            return None

    def write_traceback(self, key: str, text: str) -> Path:
        """Write a failed cell's traceback into its folder (replacing whatever lay there, a link included)."""
        path = self.cell_dir(key) / TRACEBACK
        atomic_write_bytes(path, text.encode())
        return path

    def trained_alike(self, training_key: str, but: str) -> list[str]:
        """The cells other than ``but`` whose ``cell.json`` notes ``training_key`` (cells queued before it was noted
        are not found)."""
        return [key for key in self.keys() if key != but and (self.cell_entry(key) or {}).get("training_key") == training_key]

    def clear_cell(self, key: str) -> None:
        """Forget a cell's result, curves, saved steps and traceback (``--force``/``--rerun``); its cell.json stays."""
        folder = self.cell_dir(key)
        stored = [folder / file for name in (RECORD, CURVES) for file in (name, packed_name(name))]
        for path in [*stored, folder / TRACEBACK, *folder.glob("step-*.pt*")]:
            path.unlink(missing_ok=True)

    def remove_orphan_temporaries(self, min_age_s: float = 60.0) -> list[Path]:
        """Delete ``.NAME.PID.tmp`` files that killed writers left (their pid is not running here and they are
        older than ``min_age_s``, so a live writer on another host is left alone); returns those deleted. A folder
        that leads outside the results folder is not swept (reading or writing it is refused, in one line)."""
        removed = []
        for path in [*self.root.glob("cells/*/.*.tmp"), *self.root.glob("models/.*.tmp")]:
            pid = path.name.rsplit(".", 2)[-2]
            try:
                if outside(self.root, path.parent) is not None:
                    continue
                if not pid.isdigit() or process_running(int(pid)) or time.time() - path.lstat().st_mtime < min_age_s:
                    continue
                path.unlink()
            except OSError:
                continue
            removed.append(path)
        return removed

    def keys(self) -> list[str]:
        return sorted(p.name for p in (self.root / "cells").glob("*") if p.is_dir())

    def records(self) -> Iterator[CellRecord]:
        for key in self.keys():
            record = self.record(key)
            if record is not None:
                yield record

    def partial_cells(self) -> dict[str, list[int]]:
        """Cells without a usable record that have finished steps (interrupted runs): key -> saved step indices."""
        partial = {}
        for folder in sorted(p for p in (self.root / "cells").glob("*") if p.is_dir()):
            steps = sorted(int(m.group(1)) for path in folder.glob("step-*.pt") if (m := re.fullmatch(r"step-(\d+)\.pt", path.name)))
            if steps and self.record(folder.name) is None:
                partial[folder.name] = steps
        return partial

    def find(self, prefix: str) -> list[CellRecord]:
        return [r for r in self.records() if r.key.startswith(prefix)]

    # --- checkpoints -----------------------------------------------------------------------
    def step_path(self, key: str, step: int) -> Path:
        return self.cell_dir(key) / f"step-{step}.pt"

    def model_path(self, key: str) -> Path:
        """Where shared model ``key`` is stored (its folder refused when it leads outside the results folder)."""
        return self.inside(self.root / "models", "models folder") / f"{key}.pt"

    def set_aside(self, path: Path, reason: str, then: str) -> None:
        """Move a checkpoint that is intact but does not belong where it lies (copied over another, say) to
        ``<name>.unfit``, out of the way of the recomputed one and kept for inspection, with one warning:
        ``reason`` it does not fit, what happens ``then``."""
        aside = path.with_name(f"{path.name}.unfit")
        try:
            os.replace(path, aside)
            checksum_path(path).unlink(missing_ok=True)
        except OSError as error:
            log.warning(f"checkpoint {path}: {reason}; it cannot be set aside ({error.strerror or error}), {then}")
            return
        log.warning(f"checkpoint {path}: {reason}; set aside as {aside.name}, {then}")

    # --- locks (several processes on one directory) ------------------------------------------
    def cell_lock(self, key: str, *, blocking: bool = True, label: str | None = None):
        """Held while a process runs cell ``key`` (``label``: its name, for the line that says a process waits for
        it); yields False (non-blocking) when another process runs it."""
        return file_lock(self.locks() / f"cell-{key}.lock", blocking=blocking, timeout=self.lock_timeout,
                         what=label and f"cell {label}")

    def model_lock(self, key: str):
        """Held while a process loads or trains shared model ``key``, so that it is trained once."""
        return file_lock(self.locks() / f"model-{key}.lock", timeout=self.lock_timeout)

    def locks(self) -> Path:
        """The folder of the locks (refused when it leads outside the results folder)."""
        return self.inside(self.root / "locks", "locks folder")

    save = staticmethod(save_checkpoint)
    load = staticmethod(load_checkpoint)


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (recursively through dicts, lists and tuples)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


def record_checksum(record: dict[str, Any]) -> str:
    """SHA-256 of a record's canonical JSON (sorted keys), without its ``sha256`` field."""
    content = {k: v for k, v in record.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
