"""The results directory.

``<out>/cells/<key>/record.json``   one record per (scenario, method, seed, configuration), written atomically
``<out>/cells/<key>/step-<t>.pt``   the cell's finished steps, to resume an interrupted cell
``<out>/models/<key>.pt``          models shared between cells (standard old models, references, pretrained models)
``<out>/locks/``                   advisory locks: several processes may run on one results directory at once
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchbackcompat.engine.checkpoint import atomic_write_bytes, load_checkpoint, log, save_checkpoint
from benchbackcompat.store.locks import file_lock

RECORD_FORMAT = 1


class ResultStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.reported: set[Path] = set()

    def cell_dir(self, key: str) -> Path:
        return self.root / "cells" / key

    def record(self, key: str) -> dict[str, Any] | None:
        """The finished record of a cell, or None: missing, or unusable (unreadable, another format, or not
        matching the checksum recorded at write time; reported once), so that the cell is recomputed."""
        path = self.cell_dir(key) / "record.json"
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text())
            stored = record.pop("sha256", None) if isinstance(record, dict) else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            record, stored = None, None
        if isinstance(record, dict) and stored == record_checksum(record) and record.get("format") == RECORD_FORMAT:
            return record
        if path not in self.reported:
            self.reported.add(path)
            problem = "does not match its checksum (truncated or corrupted)" if isinstance(record, dict) else "cannot be read"
            log.warning(f"result {path} {problem}; ignoring it (a run recomputes the cell)")
        return None

    def write_record(self, key: str, record: dict[str, Any]) -> Path:
        """Write the record atomically with the SHA-256 of its content (``sha256``)."""
        path = self.cell_dir(key) / "record.json"
        payload = json.loads(json.dumps({"format": RECORD_FORMAT, **record}, default=str))
        payload["sha256"] = record_checksum(payload)
        atomic_write_bytes(path, json.dumps(payload, indent=1).encode())
        return path

    def records(self) -> Iterator[dict[str, Any]]:
        for path in sorted((self.root / "cells").glob("*/record.json")):
            record = self.record(path.parent.name)
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

    def find(self, prefix: str) -> list[dict[str, Any]]:
        return [r for r in self.records() if r["key"].startswith(prefix)]

    # --- checkpoints -----------------------------------------------------------------------
    def step_path(self, key: str, step: int) -> Path:
        return self.cell_dir(key) / f"step-{step}.pt"

    def model_path(self, key: str) -> Path:
        return self.root / "models" / f"{key}.pt"

    # --- locks (several processes on one directory) ------------------------------------------
    def cell_lock(self, key: str, *, blocking: bool = True):
        """Held while a process runs cell ``key``; yields False (non-blocking) when another process runs it."""
        return file_lock(self.root / "locks" / f"cell-{key}.lock", blocking=blocking)

    def model_lock(self, key: str):
        """Held while a process loads or trains shared model ``key``, so that it is trained once."""
        return file_lock(self.root / "locks" / f"model-{key}.lock")

    save = staticmethod(save_checkpoint)
    load = staticmethod(load_checkpoint)


def record_checksum(record: dict[str, Any]) -> str:
    """SHA-256 of a record's canonical JSON (sorted keys), without its ``sha256`` field."""
    content = {k: v for k, v in record.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
