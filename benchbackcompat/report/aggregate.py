"""Stored records -> tables of per-method statistics over seeds (no formatting here).

A table is one (scenario, dataset, preset, scenario configuration); a row is one (method,
hyperparameters) with every seed of that configuration. Records of the same scenario name with
another configuration (e.g. ``--set train.epochs=1``) form their own table, labelled by the
fields that differ, so seeds are only ever pooled across identical configurations.
"""
from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from benchbackcompat.report.columns import SINGLE_UPDATE_KINDS, Column, columns_for

Record = dict[str, Any]


@dataclass(frozen=True)
class Stat:
    """A statistic over the seeds that produced a finite value."""

    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def std(self) -> float | None:
        return statistics.stdev(self.values) if self.n > 1 else None


@dataclass(frozen=True)
class Missing:
    """A cell that has no number: ``text`` is "-" (not computed) or "nan" (diverged), ``reason`` says why."""

    text: str
    reason: str


@dataclass
class Row:
    method: str
    label: str  # method name, plus the hyperparameters that differ from other rows of the same method
    params: dict[str, Any]
    records: list[Record]
    cells: dict[str, Stat | Missing] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # about the row as a whole (e.g. one seed diverged)
    rank: int | None = None
    mean_rank: float | None = None

    @property
    def finished(self) -> list[Record]:
        return [r for r in self.records if r["status"] == "finished"]


@dataclass
class Table:
    scenario: str
    kind: str
    dataset: str
    preset: str
    config: dict[str, Any]
    variant: str  # "" when the scenario has a single configuration in these results
    columns: list[Column]
    rows: list[Row]

    @property
    def single_update(self) -> bool:
        return self.kind in SINGLE_UPDATE_KINDS

    @property
    def metrics(self) -> list[str]:
        return list(dict.fromkeys(c.metric for c in self.columns))

    @property
    def records(self) -> list[Record]:
        return [r for row in self.rows for r in row.records]

    @property
    def title(self) -> str:
        return self.scenario + (f" ({self.variant})" if self.variant else "")


def build_tables(records: Iterable[Record]) -> list[Table]:
    """Group, aggregate and rank; tables sorted by (dataset, preset, scenario, variant)."""
    groups: dict[tuple[str, str, str, str], list[Record]] = defaultdict(list)
    for record in records:
        if record.get("role") == "selection":  # a grid point on the validation split: shown in its search's grid table
            continue
        config = json.dumps(without_data_root(record.get("config", {})), sort_keys=True)
        groups[(record.get("dataset", "?"), record.get("preset", "?"), record["scenario"], config)].append(record)
    variants = _variant_labels({key: without_data_root(members[0].get("config", {})) for key, members in groups.items()})
    tables = [_table(members, variants[key]) for key, members in groups.items()]
    return sorted(tables, key=lambda t: (t.dataset, t.preset, t.scenario, t.variant))


def without_data_root(config: dict[str, Any]) -> dict[str, Any]:
    """The configuration without ``data.root``: the same data reached through two paths is one table."""
    data = config.get("data")
    return {**config, "data": {k: v for k, v in data.items() if k != "root"}} if isinstance(data, dict) else config


def _variant_labels(configs: dict[tuple[str, str, str, str], dict[str, Any]]) -> dict[tuple, str]:
    """For scenarios stored with several configurations: the fields that tell them apart."""
    by_scenario: dict[tuple[str, str, str], list[tuple]] = defaultdict(list)
    for key in configs:
        by_scenario[key[:3]].append(key)
    labels = {}
    for keys in by_scenario.values():
        flat = {key: flatten(configs[key]) for key in keys}
        differing = sorted({f for key in keys for f in flat[key] if len({json.dumps(flat[k].get(f)) for k in keys}) > 1})
        for key in keys:
            labels[key] = ", ".join(f"{f}={json.dumps(flat[key].get(f))}" for f in differing) if len(keys) > 1 else ""
    return labels


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: value}


def _table(records: list[Record], variant: str) -> Table:
    first = records[0]
    metrics = list(dict.fromkeys(m for r in records for m in r.get("metrics", {})))
    metrics = metrics or list(first.get("config", {}).get("metrics", []))
    columns = columns_for(first["kind"], metrics)
    by_method: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for record in records:  # a setting chosen from a grid is its own row, apart from the same setting run directly
        chosen = record.get("selection")
        search = json.dumps({k: chosen[k] for k in ("grid", "rule", "tolerance", "validation")}, sort_keys=True) if chosen else ""
        by_method[(record["method"], json.dumps(record.get("params", {}), sort_keys=True), search)].append(record)
    rows = [Row(method, method, json.loads(params), sorted(members, key=lambda r: r["seed"]))
            for (method, params, _), members in sorted(by_method.items())]
    _label_parameter_variants(rows)
    for row in rows:
        chosen = row.records[0].get("selection")
        if chosen:
            row.label = f"{row.method} (selected " + ", ".join(f"{k}={json.dumps(v)}" for k, v in chosen["selected"].items()) + ")"
    for row in rows:
        _fill(row, columns)
    table = Table(first["scenario"], first["kind"], first.get("dataset", "?"), first.get("preset", "?"),
                  first.get("config", {}), variant, columns, rows)
    rank_rows(table)
    return table


def _label_parameter_variants(rows: list[Row]) -> None:
    by_method: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_method[row.method].append(row)
    for same in by_method.values():
        if len(same) < 2:
            continue
        flat = [flatten(row.params) for row in same]
        differing = sorted({f for p in flat for f in p if len({json.dumps(q.get(f)) for q in flat}) > 1})
        if not differing:  # the same setting, run directly and chosen from a grid: labelled below
            continue
        for row, p in zip(same, flat):
            row.label = f"{row.method} (" + ", ".join(f"{f}={json.dumps(p.get(f))}" for f in differing) + ")"


def _fill(row: Row, columns: list[Column]) -> None:
    finished = row.finished
    unfinished = [r for r in row.records if r["status"] != "finished"]
    if not finished:
        status = unfinished[0]["status"]
        text = "nan" if status == "diverged" else "-"
        reason = f"{status}: {unfinished[0].get('reason', '')}".rstrip(": ")
        row.cells = {c.id: Missing(text, reason) for c in columns}
        return
    for record in unfinished:
        row.notes.append(f"seed {record['seed']} {record['status']}: {record.get('reason', '')}".rstrip(": "))
    for column in columns:
        values = [_value(r, column) for r in finished]
        finite = tuple(v for v in values if v is not None)
        row.cells[column.id] = Stat(finite) if finite else Missing("-", _why_missing(finished[0], column))


def _value(record: Record, column: Column) -> float | None:
    value = record.get("metrics", {}).get(column.metric, {}).get(column.statistic.key)
    if value is None or isinstance(value, (list, dict)) or not math.isfinite(float(value)):
        return None
    return float(value)


def _why_missing(record: Record, column: Column) -> str:
    if column.metric not in record.get("metrics", {}):
        return f"{column.metric} was not measured in this run"
    if record.get("notes"):
        return "not computed: " + "; ".join(record["notes"])
    if column.statistic.key == "p_com":
        return "P_com undefined: the independently trained new model scores the same as the old model (zero denominator)"
    if column.statistic.key == "p_up":
        return "P_up undefined: the independently trained new model scores 0 (zero denominator)"
    return f"{column.header} could not be computed (the stored record has no value)"


def rank_rows(table: Table) -> None:
    """Rank = position by the mean of the per-column ranks (1 = best, ties share the better rank), each
    column ranked on its displayed (rounded) means in its declared direction; rows without numbers are unranked."""
    per_row: dict[int, list[int]] = defaultdict(list)
    for column in table.columns:
        scored = [(i, _display_value(row.cells.get(column.id), column)) for i, row in enumerate(table.rows)]
        scored = [(i, v) for i, v in scored if v is not None]
        sign = -1 if column.statistic.higher_is_better else 1
        for i, value in scored:
            per_row[i].append(1 + sum(1 for _, other in scored if sign * other < sign * value))
    means = {i: statistics.fmean(ranks) for i, ranks in per_row.items()}
    for i, row in enumerate(table.rows):
        if i in means:
            row.mean_rank = round(means[i], 6)
            row.rank = 1 + sum(1 for other in means.values() if round(other, 6) < row.mean_rank)
    table.rows.sort(key=lambda r: (r.rank is None, r.rank or 0, r.label))


def _display_value(cell: Stat | Missing | None, column: Column) -> float | None:
    return float(column.format(cell.mean)) if isinstance(cell, Stat) else None


def best_ids(table: Table, column: Column) -> set[int]:
    """Rows (by index) holding the best displayed mean of ``column``; empty when fewer than two rows have one."""
    scored = [(i, _display_value(row.cells.get(column.id), column)) for i, row in enumerate(table.rows)]
    scored = [(i, v) for i, v in scored if v is not None]
    if len(scored) < 2:
        return set()
    best = (max if column.statistic.higher_is_better else min)(v for _, v in scored)
    return {i for i, v in scored if v == best}
