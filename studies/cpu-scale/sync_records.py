"""Bring the finished records of a run into the published records folder.

    python studies/cpu-scale/sync_records.py RUN leaderboard/records [--drop-stale] [--supersede]

RUN is a copy of the published folder that ``publish_grid.sh`` ran into. Each record RUN holds that the folder lacks
and that the installed code would compute again (finished, diverged or not applicable, and not stale) is copied (the
record file alone: the published records carry no training curves and no models). Then each stale
record of the folder (computed by other code, as ``benchbackcompat status`` says) is removed where a current record
of the same cell replaces it: same label, preset, dataset, hyperparameters and training length. Stale records that
nothing replaces yet stay unless ``--drop-stale``: the published folder then holds only what its pages show.
With ``--supersede``, a copied record that sets evaluation options (``backfill``, ``index``: they read the trained
models, they do not train them) also replaces the published records of the same cell that set other evaluation
options: a re-run of a table with more statistics takes the place of the old one instead of standing beside it.

The published folder may be a packed store (``benchbackcompat pack``): it is then unpacked into a temporary folder,
synced there and appended back (``benchbackcompat pack --append``), which adds to the store only the records copied
and the removals, as a new part of each scenario whose records changed.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from benchbackcompat.tooling import CellRecord, ResultStore, append, cell_states, is_packed, unpack


def cell_of(record: CellRecord) -> str:
    """The cell a reader means, whatever code computed it (a record's configuration dump gained fields over time,
    so the whole configuration would tell an old record from its recomputation)."""
    train = record.config.get("train") or {}
    return json.dumps([record.label, record.preset, record.dataset, record.params, train.get("epochs"),
                       train.get("min_steps")], sort_keys=True, default=str)


def sync(run: Path, published: Path, drop_stale: bool = False, supersede: bool = False) -> tuple[int, int]:
    """(records copied, records removed: stale, and with ``supersede`` those of other evaluation options)."""
    source, target = ResultStore(run), ResultStore(published)
    current_in_run = {row["key"] for row in cell_states(run) if row["state"] in ("finished", "diverged", "not-applicable")}
    copied = 0
    for key in sorted(current_in_run):
        record = source.record(key)
        if record is not None and target.record(key) is None:
            target.cell_dir(key).mkdir(parents=True, exist_ok=True)
            shutil.copy2(source.record_path(key), target.record_path(key))
            copied += 1
    removed_earlier = superseded(source, target, current_in_run) if supersede else 0
    states = cell_states(published)
    stale = {row["key"] for row in states if row["state"] == "stale"}
    current = {cell_of(record) for row in states if row["state"] == "finished"
               if (record := target.record(row["key"])) is not None}
    removed = 0
    for key in sorted(stale):
        record = target.record(key)
        if record is not None and (drop_stale or cell_of(record) in current):
            shutil.rmtree(target.cell_dir(key))
            removed += 1
    return copied, removed + removed_earlier


EVALUATION_OPTIONS = ("backfill", "index")  # configuration groups that evaluate trained models and train nothing


def superseded(source: ResultStore, target: ResultStore, keys: set[str]) -> int:
    """Remove the records of ``target`` that set other evaluation options than a record of ``source`` (among
    ``keys``) of the same cell and scenario; the number removed."""
    def evaluated(record: CellRecord) -> str:
        return json.dumps({name: record.config.get(name) for name in EVALUATION_OPTIONS}, sort_keys=True, default=str)

    newer = {(cell_of(record), record.scenario): evaluated(record) for key in keys
             if (record := source.record(key)) is not None and any(record.config.get(n) for n in EVALUATION_OPTIONS)}
    removed = 0
    for key in sorted(set(target.keys()) - keys):
        record = target.record(key)
        if record is None or not any(record.config.get(n) for n in EVALUATION_OPTIONS):
            continue
        if newer.get((cell_of(record), record.scenario), evaluated(record)) != evaluated(record):
            shutil.rmtree(target.cell_dir(key))
            removed += 1
    return removed


def sync_into(run: Path, published: Path, drop_stale: bool = False, supersede: bool = False) -> tuple[int, int]:
    """:func:`sync` into ``published``, a results folder or a packed store."""
    if not is_packed(published):
        return sync(run, published, drop_stale, supersede)
    with tempfile.TemporaryDirectory() as folder:
        unpacked = Path(folder) / "records"
        unpack(published, unpacked)
        counts = sync(run, unpacked, drop_stale, supersede)
        append(unpacked, published)
    return counts


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a not in ("--drop-stale", "--supersede")]
    if len(arguments) != 2:
        raise SystemExit(__doc__)
    copied, removed = sync_into(Path(arguments[0]), Path(arguments[1]), "--drop-stale" in sys.argv,
                                "--supersede" in sys.argv)
    print(f"copied {copied} records, removed {removed} records (stale, or superseded with --supersede)")
