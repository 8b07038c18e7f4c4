"""The results directory.

``<out>/cells/<key>/record.json``   one record per (scenario, method, seed, configuration), written atomically
``<out>/cells/<key>/step-<t>.pt``   the cell's finished steps, to resume an interrupted cell
``<out>/models/<key>.pt``          models shared between cells (standard old models, references, pretrained models)
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchbackcompat.engine.checkpoint import atomic_write_bytes, load_checkpoint, save_checkpoint

RECORD_FORMAT = 1


class ResultStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def cell_dir(self, key: str) -> Path:
        return self.root / "cells" / key

    def record(self, key: str) -> dict[str, Any] | None:
        """The finished record of a cell, or None (missing or unreadable records are recomputed)."""
        path = self.cell_dir(key) / "record.json"
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return record if record.get("format") == RECORD_FORMAT else None

    def write_record(self, key: str, record: dict[str, Any]) -> Path:
        path = self.cell_dir(key) / "record.json"
        atomic_write_bytes(path, json.dumps({"format": RECORD_FORMAT, **record}, indent=1, default=str).encode())
        return path

    def records(self) -> Iterator[dict[str, Any]]:
        for path in sorted((self.root / "cells").glob("*/record.json")):
            record = self.record(path.parent.name)
            if record is not None:
                yield record

    def find(self, prefix: str) -> list[dict[str, Any]]:
        return [r for r in self.records() if r["key"].startswith(prefix)]

    # --- checkpoints -----------------------------------------------------------------------
    def step_path(self, key: str, step: int) -> Path:
        return self.cell_dir(key) / f"step-{step}.pt"

    def model_path(self, key: str) -> Path:
        return self.root / "models" / f"{key}.pt"

    save = staticmethod(save_checkpoint)
    load = staticmethod(load_checkpoint)
