"""Bring the finished records of a run into the published records folder.

    python docs/studies/cpu-scale/sync_records.py RUN leaderboard/records

RUN is a copy of the published folder that ``publish_grid.sh`` ran into. Each record RUN holds that the folder lacks
(finished, diverged or not applicable; failed cells are not results) is copied (the record file alone: the published records carry no training curves and no models). Then each stale
record of the folder (computed by other code, as ``benchbackcompat status`` says) is removed where a current record
of the same cell replaces it: same label, preset, dataset, hyperparameters and training length. Stale records that
nothing replaces yet stay (``leaderboard --verified-only`` leaves them out of the pages).
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from benchbackcompat.record import CellRecord
from benchbackcompat.results.status import cell_states
from benchbackcompat.store.results import ResultStore


def cell_of(record: CellRecord) -> str:
    """The cell a reader means, whatever code computed it (a record's configuration dump gained fields over time,
    so the whole configuration would tell an old record from its recomputation)."""
    train = record.config.get("train") or {}
    return json.dumps([record.label, record.preset, record.dataset, record.params, train.get("epochs"),
                       train.get("min_steps")], sort_keys=True, default=str)


def sync(run: Path, published: Path) -> tuple[int, int]:
    """(records copied, stale records removed)."""
    source, target = ResultStore(run), ResultStore(published)
    copied = 0
    for key in source.keys():
        record = source.record(key)
        if record is not None and record.status != "failed" and target.record(key) is None:
            target.cell_dir(key).mkdir(parents=True, exist_ok=True)
            shutil.copy2(source.record_path(key), target.record_path(key))
            copied += 1
    states = cell_states(published)
    stale = {row["key"] for row in states if row["state"] == "stale"}
    current = {cell_of(record) for row in states if row["state"] == "finished"
               if (record := target.record(row["key"])) is not None}
    removed = 0
    for key in sorted(stale):
        record = target.record(key)
        if record is not None and cell_of(record) in current:
            shutil.rmtree(target.cell_dir(key))
            removed += 1
    return copied, removed


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    copied, removed = sync(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"copied {copied} records, removed {removed} stale records that current ones replace")
