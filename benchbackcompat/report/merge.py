"""Merging results from several directories (or machines) into one set of records.

Duplicate rule: a cell is identified by its key (the hash of the resolved scenario configuration,
method, hyperparameters, seed, method code, results version and data fingerprint). When several directories hold the same key, exactly one record
is kept, never two:
  1. a finished record beats an unfinished one (diverged, then not-applicable, then failed), so a
     cell that failed on one machine and finished on another counts as finished;
  2. otherwise the record from the directory listed first wins (``--results`` order is priority).
Discarded duplicates are reported, and flagged when their numbers differ from the kept record.
Records of the same cell under other keys (computed by other code or on other data: stale) are
left out in favour of the most recently computed one, and counted. ``publishable`` applies the publishing policy
(verified records only, or every record with the unverified ones named) to a merged set.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbackcompat.errors import BenchError
from benchbackcompat.record import CellRecord, parse_record
from benchbackcompat.report.provenance import Verification
from benchbackcompat.store.packing import results_kind, stored_records

SELECTION_OUTCOME = ("selected", "note", "grid_size", "points", "grid_seconds")  # what a grid search saw, not how it ran
STATUS_PRIORITY = {"finished": 0, "diverged": 1, "not-applicable": 2, "failed": 3}


@dataclass(frozen=True)
class Duplicate:
    key: str
    label: str
    kept: str  # source of the kept record
    dropped: str
    differs: bool  # the dropped record's status or metrics differ from the kept one


@dataclass
class Merged:
    records: list[CellRecord]
    duplicates: list[Duplicate] = field(default_factory=list)
    superseded: list[CellRecord] = field(default_factory=list)  # older records of the same cell (other code/data)
    verification: Verification | None = None  # the rendering commit and which records its code would not compute
    left_out: list[tuple[CellRecord, str]] = field(default_factory=list)  # records not published, and why


def slot(record: CellRecord) -> str:
    """What a reader means by "the same cell": scenario configuration (without the data path), method, hyperparameters,
    seed, preset, dataset, role and how a grid chose the parameters, whatever code or data version computed it."""
    config = dict(record.config)
    config["data"] = {k: v for k, v in (config.get("data") or {}).items() if k != "root"}
    selection = {k: v for k, v in (record.selection or {}).items() if k not in SELECTION_OUTCOME}
    return json.dumps([record.dataset, record.preset, record.scenario, config, record.method, record.params,
                       record.seed, record.role, selection], sort_keys=True, default=str)


def latest_per_slot(records: list[CellRecord]) -> tuple[list[CellRecord], list[CellRecord]]:
    """(the newest record of each slot, the older ones): after a method's code or the data changed, the old record
    stays in the store (stale, see ``benchbackcompat status``) but must not be pooled with the new one as a seed."""
    newest: dict[str, CellRecord] = {}
    for record in records:
        other = newest.setdefault(slot(record), record)
        if other is not record and (record.computed_at or "") > (other.computed_at or ""):
            newest[slot(record)] = record
    kept = {id(r) for r in newest.values()}
    return [r for r in records if id(r) in kept], [r for r in records if id(r) not in kept]


def merge_records(sources: Iterable[tuple[str, Iterable[CellRecord | dict[str, Any]]]]) -> Merged:
    """Merge ``(source name, records)`` pairs, earlier sources first, by the rule in the module docstring (records in
    their stored form are parsed first)."""
    kept: dict[str, tuple[str, CellRecord]] = {}
    duplicates: list[Duplicate] = []
    for name, records in sources:
        for record in map(parse_record, records):
            key = record.key
            if key not in kept:
                kept[key] = (name, record)
                continue
            old_name, old = kept[key]
            if _priority(record) < _priority(old):
                kept[key] = (name, record)
                duplicates.append(Duplicate(key, record.label, name, old_name, _differs(record, old)))
            else:
                duplicates.append(Duplicate(key, old.label, old_name, name, _differs(record, old)))
    records = [record for _, record in sorted(kept.values(), key=lambda item: item[1].key)]
    records, superseded = latest_per_slot(records)
    return Merged(records, sorted(duplicates, key=lambda d: (d.key, d.dropped)), superseded)


def read_results(roots: list[Path]) -> Merged:
    """Every record under ``roots`` (results folders or packed stores, in priority order), merged; an error if a root
    holds no results."""
    for root in roots:
        results_kind(root)
    return merge_records((str(root), stored_records(root)) for root in roots)


def _priority(record: CellRecord) -> int:
    return STATUS_PRIORITY[record.status]


def _differs(a: CellRecord, b: CellRecord) -> bool:
    return a.status != b.status or getattr(a, "metrics", None) != getattr(b, "metrics", None)


def publishable(merged: Merged, check: Verification, verified_only: bool) -> list[str]:
    """Decide what ``merged`` publishes, the publishing policy: a record is unverified when a dirty tree computed it
    or this commit's code would not compute it again (``check``). With ``verified_only`` the unverified records are
    left out (listed, with why), else the pages name them. Sets ``merged.verification``; returns the warnings."""
    warnings = []
    unverified = {r.key: why for r in merged.records
                  if (why := ("computed from an uncommitted tree" if "+dirty" in str(r.versions.commit) else "")
                      or check.stale.get(r.key))}
    if verified_only and (check.commit is None or "+dirty" in check.commit):
        warnings.append(f"rendering from an uncommitted tree ({check.commit or 'no commit'}): publish from a clean "
                        "commit, so that the pages name the code that verified them")
    if unverified and verified_only:
        merged.left_out = [(r, unverified[r.key]) for r in merged.records if r.key in unverified]
        merged.records = [r for r in merged.records if r.key not in unverified]
        warnings.append(f"{len(unverified)} cells left out (computed by other code or from an uncommitted tree; "
                        "`benchbackcompat status` lists them)")
        if not merged.records:
            raise BenchError("every stored cell was computed by other code than this commit's or from an "
                             "uncommitted tree; run them again, or publish without --verified-only")
    merged.verification = Verification(check.commit, {} if merged.left_out else unverified)
    return warnings
