"""Stored records -> tables of per-method statistics over seeds, with 95% intervals (no formatting here).

A table is one (scenario, dataset, preset, scenario configuration); a row is one (method,
hyperparameters) with every seed of that configuration. Records of the same scenario name with
another configuration (e.g. ``--set train.epochs=1``) form their own table, labelled by the
fields that differ, so seeds are only ever pooled across identical configurations. Seeds of one configuration
computed on different data (two data fingerprints for the same data configuration, e.g. results merged from machines
whose libraries decode the images into other bytes) are kept apart too: one table per fingerprint, named by it, with a
warning.

Intervals bootstrap the stored per-query outcomes, combined with the spread over seeds in an interval
honest for their number (``metrics.bootstrap``); the flip rates (``metrics.flips``) are derived from the same
outcomes when the tables are built (records need not store them). P_com is shown only where the update it divides
by (reference self - old self) is significantly positive and at least ``MIN_UPDATE_GAIN`` points. A row whose
self-test is below ``chance_floor`` (twice chance, or a fifth of the way to 100% where chance is high) is flagged and not
ranked; bold marks every row that no row is significantly better than (the column's rank-1 tier).
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import statistics
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import bootstrap, flips, live, outcomes
from benchbackcompat.record import CellRecord, FinishedRecord, parse_record
from benchbackcompat.scenarios.kinds import kind_class
from benchbackcompat.report.columns import STATISTICS, Column, columns_for, metric_name, ranking
from benchbackcompat.report.markdown import escape

MIN_UPDATE_GAIN = 10.0  # points: below this reference self - old self, P_com divides by noise (a 6-point update
# on 600 queries gives P_com intervals two units wide)
CHANCE_FACTOR = 2.0  # a self-test below this multiple of chance marks a model at chance level
CHANCE_SHARE = 0.2  # ... or, where chance is high (pair verification: 50%), below this share of the way to 100%
DATA_DIGITS = 8  # hex digits that name a machine's data in a table's label: one "data ..." suffix fits a 160-character row


def chance_floor(chance: float) -> float:
    """The self-test (%) below which a model is at chance level: ``CHANCE_FACTOR`` x chance, or ``CHANCE_SHARE`` of
    the way from chance to 100% where that is lower (twice the 50% of pair verification would be 100%)."""
    return min(CHANCE_FACTOR * chance, chance + CHANCE_SHARE * (100.0 - chance))


@dataclass(frozen=True)
class Stat:
    """A statistic over the seeds that produced a finite value, with their query-bootstrap replicates when every
    such seed stored per-query outcomes (``bootstrap.SeedSample``; its interval is honest for the number of seeds)
    and the range of values it can take (``bounds``; its interval stays inside it)."""

    values: tuple[float, ...]
    replicates: bootstrap.SeedSample | np.ndarray | None = field(default=None, compare=False, repr=False)
    bounds: tuple[float, float] = field(default=(-math.inf, math.inf), compare=False, repr=False)

    @functools.cached_property
    def interval(self) -> tuple[float, float] | None:
        return bootstrap.interval(self.replicates, bounds=self.bounds) if self.replicates is not None else None

    @property
    def exact(self) -> bool:
        """Whether its interval has zero width: no resample of queries or seeds moves it (e.g. P_up of the
        reference model itself, or AC 0 where no pair is ever compatible)."""
        interval = self.interval
        return interval is not None and interval[0] == interval[1]

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
    """A cell that has no number: ``text`` is "-" (not computed), "nan" (diverged) or "–" (P_com not shown),
    ``reason`` says why, ``word`` in a few words (e.g. "update < 10 pts")."""

    text: str
    reason: str
    word: str = "not computed"


@dataclass
class Row:
    method: str
    label: str  # method name, plus the hyperparameters that differ from other rows of the same method
    params: dict[str, Any]
    records: list[CellRecord]
    cells: dict[str, Stat | Missing] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # about the row as a whole (e.g. one seed diverged)
    rank: int | None = None
    chance: str = ""  # why the row is at chance level ("" when it is not)

    @property
    def finished(self) -> list[FinishedRecord]:
        return [r for r in self.records if isinstance(r, FinishedRecord)]

    @property
    def minutes(self) -> float | None:
        """The mean compute of the row's finished cells (training and evaluation,
        ``FinishedRecord.compute_seconds``) in minutes; None without timings."""
        seconds = [r.compute_seconds for r in self.finished if r.timings]
        return statistics.fmean(seconds) / 60 if seconds else None

    data: str = ""  # the short data fingerprint its configuration is split by ("" when all its seeds share the data)

    @property
    def qualifier(self) -> str:
        """The label without the method's name: what tells the row from the method's other rows ("" for its only one)."""
        return self.label.removeprefix(self.method).strip().removeprefix("(").removesuffix(")")

    @property
    def config_hash(self) -> str:
        """The configuration hash of the row's cells (:func:`config_hash`; one per row)."""
        return config_hash(self.records[0], self.data) if self.records else ""


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
    unranked: str = ""  # why no row is ranked ("" when some are)
    data: str = ""  # the short data fingerprint its configuration is split by ("" when all its seeds share the data)

    @property
    def single_update(self) -> bool:
        return kind_class(self.kind).single_update

    @property
    def metrics(self) -> list[str]:
        return list(dict.fromkeys(c.metric for c in self.columns))

    @property
    def records(self) -> list[CellRecord]:
        return [r for row in self.rows for r in row.records]

    @property
    def title(self) -> str:
        return self.scenario + (f" ({self.variant})" if self.variant else "")


def build_tables(records: Iterable[CellRecord | dict[str, Any]]) -> list[Table]:
    """Group, aggregate and rank (records in their stored form are parsed first); tables sorted by (dataset,
    preset, scenario, variant)."""
    groups, variants = _grouped([r for r in map(parse_record, records) if r.role != "selection"])
    tables = [_table(members, variants[key], key[4]) for key, members in groups.items()]
    return sorted(tables, key=lambda t: (t.dataset, t.preset, t.scenario, t.variant))


def _grouped(records: list[CellRecord]) -> tuple[dict[tuple[str, str, str, str, str], list[CellRecord]], dict[tuple, str]]:
    """The records of each table (dataset, preset, scenario, configuration, data: :func:`_data_apart`) and each
    table's variant label. Grid points on the validation split (``role == "selection"``) are shown only in their
    search's grid table."""
    groups: dict[tuple[str, str, str, str], list[CellRecord]] = defaultdict(list)
    for record in records:
        config = json.dumps(table_config(record.config), sort_keys=True)
        groups[(record.dataset or "?", record.preset or "?", record.scenario, config)].append(record)
    labels = _variant_labels({key: table_config(members[0].config) for key, members in groups.items()})
    split: dict[tuple[str, str, str, str, str], list[CellRecord]] = {}
    variants: dict[tuple, str] = {}
    for key, members in groups.items():
        for data, part in _data_apart(members, "; ".join(p for p in (key[2], labels[key]) if p)).items():
            split[(*key, data)] = part
            variants[(*key, data)] = ", ".join(p for p in (labels[key], f"data {data}" if data else "") if p)
    return split, variants


def data_fingerprint(record: CellRecord) -> str:
    """The fingerprint of the data the record was computed on (``identity.data_sha256``; "" when not stored)."""
    value = record.identity.get("data_sha256")
    return value if isinstance(value, str) else ""


def _data_slot(record: CellRecord) -> str:
    """The record's data configuration with its class order, without the path to the data: records that share it
    (the methods of one seed) were computed on the same data exactly when their data fingerprints agree."""
    data = record.config.get("data")
    slot = {**record.config, "data": {k: v for k, v in data.items() if k != "root"}} if isinstance(data, dict) else record.config
    return json.dumps(slot, sort_keys=True, default=str)


def _data_apart(records: list[CellRecord], name: str) -> dict[str, list[CellRecord]]:
    """The records of one configuration by the data they were computed on: {"": all} when they agree, else one
    group per dataset, with a warning naming the configuration ``name`` and the groups.

    Two records disagree when both carry the fingerprint of their dataset before the seed orders it
    (``data_source``, one for every seed) and these differ, or when they share the data configuration
    (:func:`_data_slot`: the methods of one seed) and their data fingerprints differ. A group is a dataset: the
    records of one ``data_source`` with every record that shares a slot and a data fingerprint with one of them,
    named by ``DATA_DIGITS`` hex digits of that source. Records that reach no source (written before records stored it) form
    one group, "unknown", unless they disagree among themselves; then they are split by their data fingerprint
    (one group per seed where each seed orders its own classes: nothing tells which of them share a machine)."""
    key = {id(r): (_data_slot(r), data_fingerprint(r)) for r in records}
    by_slot: dict[str, set[str]] = defaultdict(set)
    for slot, fingerprint in key.values():
        if fingerprint:
            by_slot[slot].add(fingerprint)
    if len({r.data_source for r in records if r.data_source}) <= 1 and all(len(f) == 1 for f in by_slot.values()):
        return {"": records}
    source_of = {key[id(r)]: r.data_source for r in records if r.data_source and key[id(r)][1]}

    def source(record: CellRecord) -> str | None:
        return record.data_source or source_of.get(key[id(record)])

    slots: dict[str, set[str]] = defaultdict(set)
    for record in records:
        if not source(record):
            slots[key[id(record)][0]].add(key[id(record)][1])
    split_sourceless = any(len(fingerprints) > 1 for fingerprints in slots.values())

    def group(record: CellRecord) -> str:
        if found := source(record):
            return found[:DATA_DIGITS]
        return (key[id(record)][1][:DATA_DIGITS] or "unknown") if split_sourceless else "unknown"

    parts: dict[str, list[CellRecord]] = defaultdict(list)
    for record in records:
        parts[group(record)].append(record)
    parts = dict(sorted(parts.items()))
    logging.getLogger("benchbackcompat").warning(
        f"{name} ({records[0].preset or '?'}, {records[0].dataset or '?'}): its records were computed on different "
        f"data (fingerprints {', '.join(parts)}); kept apart, one table per fingerprint, not pooled")
    return parts


def _row_key(record: CellRecord) -> tuple[str, str, str]:
    """What tells rows of one table apart: the method, its hyperparameters and, for a setting chosen from a grid,
    the search that chose it (apart from the same setting run directly)."""
    chosen = record.selection
    search = json.dumps({k: chosen[k] for k in ("grid", "rule", "tolerance", "validation")}, sort_keys=True) if chosen else ""
    return record.method, json.dumps(record.params, sort_keys=True), search


def config_hash(record: CellRecord, data: str = "") -> str:
    """12 hex digits of SHA-256 over the resolved configuration without the seed: the scenario and its
    configuration as tables tell them apart (:func:`table_config`), the method, its hyperparameters, the search
    that chose them and, where seeds of one configuration were computed on different data, the short data
    fingerprint ``data`` (:func:`_data_apart`). Two cells with the same hash differ only in their seed (or the code
    that computed them)."""
    identity = [record.role, record.scenario, table_config(record.config), *_row_key(record)] + ([data] if data else [])
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]


def configuration_labels(records: Iterable[CellRecord]) -> list[tuple[str, str]]:
    """(variant, configuration hash) of each record, as the leaderboard tells configurations apart: the variant
    is the table's label (the configuration fields that differ between stored configurations of its scenario,
    e.g. ``train.min_steps=4000``), then the row's (the hyperparameters that differ between rows of its method,
    e.g. ``lambda_=0.1``), joined by "; "; "" for the only configuration of a scenario and method. Grid points
    on the validation split are labelled ``validation grid``."""
    records = list(records)
    labels: dict[int, str] = {}
    groups, variants = _grouped([r for r in records if r.role != "selection"])
    for key, members in groups.items():
        for row in _rows(members):
            labels.update({id(r): ("; ".join(p for p in (variants[key], row.qualifier) if p), key[4]) for r in row.records})
    return [(labels[id(r)][0], config_hash(r, labels[id(r)][1])) if id(r) in labels else ("validation grid", config_hash(r))
            for r in records]


def table_config(config: dict[str, Any]) -> dict[str, Any]:
    """The configuration as tables (and reproductions) tell configurations apart: without ``data.root`` (the same
    data reached through two paths is one table) and, under ``data.order_by_seed``, without the
    ``data.class_order_seed`` that each cell draws from its own seed (so that its seeds pool into one table)."""
    data = config.get("data")
    if not isinstance(data, dict):
        return config
    drop = {"root", "class_order_seed"} if data.get("order_by_seed") else {"root"}
    return {**config, "data": {k: v for k, v in data.items() if k not in drop}}


def _variant_labels(configs: dict[tuple[str, str, str, str], dict[str, Any]]) -> dict[tuple, str]:
    """For scenarios stored with several configurations: the fields that tell them apart (:func:`_label`)."""
    by_scenario: dict[tuple[str, str, str], list[tuple]] = defaultdict(list)
    for key in configs:
        by_scenario[key[:3]].append(key)
    labels = {}
    for keys in by_scenario.values():
        flat = {key: flatten(configs[key]) for key in keys}
        differing = sorted({f for key in keys for f in flat[key] if len({json.dumps(flat[k].get(f)) for k in keys}) > 1})
        found = {key: _label(flat, key, differing) if len(keys) > 1 else "" for key in keys}
        if len(set(found.values())) < len(keys):  # the short form would merge two configurations: spell out every field
            found = {key: ", ".join(f"{f}={json.dumps(flat[key].get(f))}" for f in differing) for key in keys}
        labels.update(found)
    return labels


def _label(flat: dict[tuple, dict[str, Any]], key: tuple, differing: list[str]) -> str:
    """The differing fields of configuration ``key`` (``train.min_steps=4000``); of an option group that only some
    configurations set (e.g. ``backfill``), only the fields that differ among those that set it, or its bare name
    where they agree, and nothing where ``key`` leaves it unset."""
    groups: dict[str, list[str]] = defaultdict(list)
    for name in differing:
        groups[name.split(".")[0]].append(name)
    parts = []
    for group, fields in groups.items():
        setting = {k for k, values in flat.items()
                   if any(v is not None for f, v in values.items() if f == group or f.startswith(group + "."))}
        if len(setting) < len(flat) and all("." in f for f in fields):  # a group of options some leave unset
            if key not in setting:
                continue
            fields = [f for f in fields if len({json.dumps(flat[k].get(f)) for k in setting}) > 1] or [group]
        parts += [f if f == group else f"{f}={json.dumps(flat[key].get(f))}" for f in fields]
    return ", ".join(parts)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: value}


def _rows(records: list[CellRecord]) -> list[Row]:
    """One row per method, hyperparameters and search, labelled by what tells it apart from the method's other rows."""
    by_method: dict[tuple[str, str, str], list[CellRecord]] = defaultdict(list)
    for record in records:
        by_method[_row_key(record)].append(record)
    rows = [Row(method, method, json.loads(params), sorted(members, key=lambda r: r.seed))
            for (method, params, _), members in sorted(by_method.items())]
    _label_parameter_variants(rows)
    for row in rows:
        chosen = row.records[0].selection
        if chosen:
            row.label = f"{row.method} (selected " + ", ".join(f"{k}={json.dumps(v)}" for k, v in chosen["selected"].items()) + ")"
    return rows


def _table(records: list[CellRecord], variant: str, data: str = "") -> Table:
    first = records[0]
    metrics = list(dict.fromkeys(m for r in records if isinstance(r, FinishedRecord) for m in r.metrics))
    metrics = metrics or list(first.config.get("metrics", []))
    held = {(m, key) for r in records if isinstance(r, FinishedRecord) for m in metrics
            for key in live.values(r.backfill, r.index, r.matrices.get(m), m)}
    columns = columns_for(first.kind, metrics, held)
    rows = _rows(records)
    for row in rows:
        row.data = data
        _fill(row, columns)
    table = Table(first.scenario, first.kind, first.dataset or "?", first.preset or "?", first.config, variant,
                  columns, rows, data=data)
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
    unfinished = [r for r in row.records if not isinstance(r, FinishedRecord)]
    if not finished:
        status = unfinished[0].status
        text = "nan" if status == "diverged" else "-"
        reason = f"{status}: {unfinished[0].reason}".rstrip(": ")
        row.cells = {c.id: Missing(text, reason, status.replace("-", " ")) for c in columns}
        return
    for record in unfinished:
        row.notes.append(f"seed {record.seed} {record.status}: {record.reason}".rstrip(": "))
    replicates = [record_replicates(r) for r in finished]
    flip_rates = [{m: record_flips(r, m) for m in dict.fromkeys(c.metric for c in columns)} for r in finished]
    for column in columns:
        row.cells[column.id] = _stat(finished, replicates, flip_rates, column.metric, column.statistic.key) or Missing(
            "-", _why_missing(finished[0], column))
    for column in columns:
        if column.statistic.key == "p_com":
            hidden = undecidable_update(_stat(finished, replicates, flip_rates, column.metric, "gain"))
            if hidden is not None:
                row.cells[column.id] = hidden
    row.chance = _chance_reason(finished, columns)


def _stat(records: list[FinishedRecord], replicates: list[dict], flip_rates: list[dict[str, dict[str, float]]],
          metric: str, key: str) -> Stat | None:
    """The statistic ``key`` of ``metric`` over the seeds with a finite value; replicates combined over
    those seeds when each of them has some. ``flip_rates``: each record's :func:`record_flips` per metric."""
    values, reps, seeds = [], [], []
    for record, rep, rates in zip(records, replicates, flip_rates):
        value = _metric_value(record, metric, key, rates.get(metric, {}))
        if value is not None:
            values.append(value)
            reps.append(rep.get(metric, {}).get(key))
            seeds.append(record.seed)
    if not values:
        return None
    if key in live.KEYS and len(values) > 1:  # no per-query outcomes: the t-interval over the seeds alone
        reps = [np.full(1, v) for v in values]
    combined = bootstrap.over_seeds(values, reps, seeds) if all(r is not None for r in reps) else None
    statistic = STATISTICS.get(key)
    return Stat(tuple(values), combined, statistic.bounds if statistic else (-math.inf, math.inf))


def records_stat(records: list[FinishedRecord], metric: str, key: str) -> Stat | None:
    """The statistic ``key`` of ``metric`` over ``records`` alone, as a table cell would show it over them (e.g. a
    claim's declared seeds of a row that holds more)."""
    return _stat(records, [record_replicates(r) for r in records], [{metric: record_flips(r, metric)} for r in records],
                 metric, key)


def _metric_value(record: FinishedRecord, metric: str, key: str, flip_rates: dict[str, float]) -> float | None:
    summary = record.metrics.get(metric)
    if summary is None:
        return None
    if key in flips.KEYS:
        value = flip_rates.get(key)
        return value if value is not None and math.isfinite(value) else None
    if key in live.KEYS:
        return live.values(record.backfill, record.index, record.matrices.get(metric), metric).get(key)
    if key == "gain":  # the update P_com divides by: the independent new model's self-test minus the old self-test
        new, old = summary.reference_self, summary.old_self
        return None if new is None or old is None else float(new) - float(old)
    value = summary.statistic(key)
    return float(value) if value is not None and math.isfinite(float(value)) else None


def record_flips(record: FinishedRecord, metric: str) -> dict[str, float]:
    """The flip rates of ``metric`` (``metrics.flips.summary``) from the record's per-query outcomes; {} without
    them or where they are not defined (average precisions)."""
    if not flips.defined_for(metric):
        return {}
    try:
        return flips.summary(record.outcomes.get(metric) or {})
    except (BenchError, KeyError, TypeError, ValueError):
        return {}


def undecidable_update(gain: Stat | None) -> Missing | None:
    """The "–" cell of a P_com that is not shown, saying why (None when it is shown): the update it divides by must
    be significantly positive and at least ``MIN_UPDATE_GAIN`` points."""
    if gain is None:
        return Missing("–", "P_com not shown: the record has no reference self-tests", "no reference")
    text = f"{gain.mean:.2f}"
    if gain.interval is not None:
        text += f" [{gain.interval[0]:.2f}, {gain.interval[1]:.2f}]"
    if gain.interval is not None and not gain.interval[0] > 0:
        why, word = "is not significantly positive", "update not > 0"
    elif gain.mean < MIN_UPDATE_GAIN:
        why, word = f"is below the minimum of {MIN_UPDATE_GAIN:g} points", f"update < {MIN_UPDATE_GAIN:g} pts"
    else:
        return None
    return Missing("–", f"P_com not shown: the update it divides by, reference self − old self = {text} points, {why}",
                   word)


def gain_stat(records: list[FinishedRecord], metric: str, replicates: dict[tuple[str, str], np.ndarray]) -> Stat | None:
    """The update P_com divides by (reference self − old self) over one row's seeds, as the tables' "gain" statistic;
    ``replicates``: :func:`gain_replicates` of (at least) these records."""
    values, reps, seeds = [], [], []
    for record in records:
        summary = record.metrics.get(metric)
        if summary is None or summary.reference_self is None or summary.old_self is None:
            continue
        values.append(float(summary.reference_self) - float(summary.old_self))
        reps.append(replicates.get((record.key, metric)))
        seeds.append(record.seed)
    if not values:
        return None
    return Stat(tuple(values), bootstrap.over_seeds(values, reps, seeds) if all(r is not None for r in reps) else None)


def gain_replicates(records: Iterable[FinishedRecord], metrics: Iterable[str]) -> dict[tuple[str, str], np.ndarray]:
    """(record key, metric) -> bootstrap replicates of reference self − old self for one-update records with both
    self-tests' outcomes, as :func:`record_replicates` resamples them (the same query weights) but from those two
    entries only, in one matrix product per query count and seed: cheap enough for every DataFrame."""
    wanted = set(metrics)
    pairs: dict[tuple[int, int], list[tuple[tuple[str, str], np.ndarray, np.ndarray]]] = defaultdict(list)
    for record in records:
        for metric in wanted & set(record.outcomes):
            stored = record.outcomes[metric] or {}
            try:
                entries = stored.get("C") or []
                if len(entries) != 2 or entries[0][0] is None or not stored.get("reference_self"):
                    continue
                old, new = outcomes.decode(entries[0][0]), outcomes.decode(stored["reference_self"])
            except (BenchError, KeyError, TypeError, ValueError):
                continue
            if len(old) == len(new):
                pairs[(len(old), int(record.seed))].append(((record.key, metric), old, new))
    found = {}
    for (n, seed), members in pairs.items():
        stacked = np.stack([vector for _, old, new in members for vector in (old, new)])
        scores = bootstrap.resampled_scores(stacked, bootstrap.query_weights(n, seed))
        found.update({key: scores[:, 2 * i + 1] - scores[:, 2 * i] for i, (key, _, _) in enumerate(members)})
    return found


def margin(row: Row, metric: str) -> tuple[float, tuple[float, float] | None] | None:
    """A one-update row's compatibility margin, cross − its own old self-test (> 0: compatible): (mean over seeds,
    95% interval of the paired difference, None without replicates); None without both tests."""
    cross, old = row.cells.get(f"{metric}:cross"), row.cells.get(f"{metric}:old_self")
    if not (isinstance(cross, Stat) and isinstance(old, Stat)):
        return None
    interval = None
    if cross.replicates is not None and old.replicates is not None:
        interval = bootstrap.interval(cross.replicates - old.replicates)
    return cross.mean - old.mean, interval


def record_replicates(record: FinishedRecord) -> dict[str, dict[str, np.ndarray]]:
    """Bootstrap replicates of every statistic of a record, per metric, from its per-query outcomes
    ({} for a metric without outcomes, e.g. records written before outcomes were stored, verification ones included).
    Computed once per record object while it is among the last :data:`MEMO` asked for (tables, margins and claims
    ask again); the arrays are read-only."""
    held = _MEMO.get(id(record))
    if held is not None and held[0] is record:
        _MEMO.move_to_end(id(record))
        return held[1]
    result: dict[str, dict[str, np.ndarray]] = {}
    for metric, stored in record.outcomes.items():
        try:
            result[metric] = _replicates(stored, record.seed)
        except (BenchError, KeyError, TypeError, ValueError):
            continue  # unusable outcomes: the cell keeps its point value, without an interval
    for values in result.values():
        for array in values.values():
            array.setflags(write=False)
    _MEMO[id(record)] = (record, result)
    if len(_MEMO) > MEMO:
        _MEMO.popitem(last=False)
    return result


MEMO = 2048  # records whose replicates are kept (the published leaderboard has 1,311)
_MEMO: OrderedDict[int, tuple[FinishedRecord, dict[str, dict[str, np.ndarray]]]] = OrderedDict()


def _replicates(stored: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    entries = stored.get("C") or []
    T = len(entries)
    cells = [(t, k) for t in range(T) for k in range(t + 1) if entries[t][k] is not None]
    references = [name for name in ("reference_self",) if stored.get(name)]
    decoded = [outcomes.decode(entries[t][k]) for t, k in cells] + [outcomes.decode(stored[n]) for n in references]
    if not decoded:
        return {}
    if len({len(d) for d in decoded}) != 1:
        raise ValueError("entries evaluated on different query sets")
    scores = bootstrap.resampled_scores(np.stack(decoded), bootstrap.query_weights(len(decoded[0]), int(seed)))
    C = np.full((scores.shape[0], T, T), np.nan)
    for i, (t, k) in enumerate(cells):
        C[:, t, k] = scores[:, i]
    values = bootstrap.batched_matrix_statistics(C)
    if all(flips.is_hits(d) for d in decoded):
        values.update(flips.resampled(stored, bootstrap.query_weights(len(decoded[0]), int(seed))))
    if T == 2:
        values.update(self=C[:, 1, 1], cross=C[:, 1, 0], old_self=C[:, 0, 0])
        if references and entries[0][0] is not None:
            old, new = C[:, 0, 0], scores[:, len(cells)]  # P_com divides by the cross-test's gallery model's self-test
            with np.errstate(invalid="ignore", divide="ignore"):
                values.update(reference_self=new, gain=new - old,
                              p_com=(values["cross"] - old) / (new - old), p_up=(values["self"] - new) / new)
    return values


def _chance_reason(records: list[FinishedRecord], columns: list[Column]) -> str:
    """Why a row is at chance level ("" when it is not): its weakest self-test (old and new model for one
    update, every model of a sequence), averaged over seeds, is below ``CHANCE_FACTOR`` x the chance level
    of the table's first metric (:func:`chance_floor`)."""
    metric = columns[0].metric if columns else None
    chances = [r.chance.get(metric) for r in records]
    if metric is None or any(c is None for c in chances):
        return ""
    weakest = []
    for record in records:
        C = record.matrices.get(metric) or []
        diagonal = [C[i][i] for i in range(len(C)) if C[i][i] is not None and math.isfinite(C[i][i])]
        if not diagonal:
            return ""
        weakest.append(min(diagonal))
    chance, self_test = statistics.fmean(chances), statistics.fmean(weakest)
    if self_test >= chance_floor(chance):
        return ""
    return (f"at chance level: its weakest self-test ({self_test:.2f}) is below {chance_floor(chance):.2f} (chance "
            f"{chance:.2f}) in {metric}; not ranked")


def _why_missing(record: FinishedRecord, column: Column) -> str:
    if column.metric not in record.metrics:
        return f"{column.metric} was not measured in this run"
    if record.notes:
        return "not computed: " + "; ".join(record.notes)
    if column.statistic.key in flips.KEYS:
        if column.metric not in record.outcomes:
            return "flip rates need per-query outcomes, and this record stored none"
        return "flip rates are defined for hit outcomes (0/1), not for average precisions"
    if column.statistic.key == "p_com":
        return "P_com undefined: the independently trained new model scores the same as the old model (zero denominator)"
    if column.statistic.key == "p_up":
        return "P_up undefined: the independently trained new model scores 0 (zero denominator)"
    return f"{column.header} could not be computed (the stored record has no value)"


def rank_rows(table: Table) -> None:
    """Rank by the scenario kind's primary statistic on the first metric (``columns.ranking``): a row's rank is 1 +
    the number of rows significantly better than it (paired bootstrap of the difference), so rows that no row
    beats share rank 1 and a rank is a tier, not an order of noisy means. Without per-query replicates the
    displayed means decide, ties broken by the kind's second statistic. Rows are listed by rank, then mean. Only rows with a displayed
    primary statistic are ranked: rows at chance level, without numbers or with an undecidable P_com are not.
    When no row has one, nothing is ranked and ``table.unranked`` says why: no other statistic ranks
    compatibility (the cross-test alone would put an incompatible model, e.g. ``independent`` at chance-level
    cross, above compatible ones)."""
    if not table.columns:
        return
    metric = table.columns[0].metric
    by_key = {c.statistic.key: c for c in table.columns if c.metric == metric}
    primary, secondary = (by_key.get(key) for key in ranking(table.kind))
    eligible = [i for i, row in enumerate(table.rows) if not row.chance]

    def shown(i: int, column: Column | None) -> float | None:
        return _display_value(table.rows[i].cells.get(column.id), column) if column is not None else None

    candidates = [i for i in eligible if shown(i, primary) is not None]
    if not candidates and primary is not None and any(row.finished for row in table.rows):
        table.unranked = (f"Not ranked: no row has a decidable {primary.statistic.header} ({escape(metric_name(metric))}), "
                          f"the primary statistic of `{table.kind}`; no other statistic ranks compatibility.")

    def sort_key(i: int) -> tuple[float, ...]:
        key = []
        for column in (primary, secondary):
            value = shown(i, column)
            sign = -1.0 if column is None or column.statistic.higher_is_better else 1.0
            key.append(math.inf if value is None else sign * value)
        return tuple(key)

    keys = {i: sort_key(i) for i in candidates}
    higher = primary.statistic.higher_is_better if primary is not None else True

    def beats(j: int, i: int) -> bool:
        """Row j is significantly better than row i on the primary statistic (paired bootstrap of the difference);
        without replicates, on the displayed values and the tie-breaker."""
        a, b = table.rows[j].cells.get(primary.id), table.rows[i].cells.get(primary.id)
        if isinstance(a, Stat) and isinstance(b, Stat) and a.replicates is not None and b.replicates is not None:
            return bootstrap.significantly_worse(a.replicates, b.replicates, higher)
        return keys[j] < keys[i]

    for i, row in enumerate(table.rows):
        row.rank = 1 + sum(1 for j in keys if j != i and beats(j, i)) if i in keys else None
    order = {id(table.rows[i]): keys[i] for i in keys}
    table.rows.sort(key=lambda r: (r.rank is None, r.rank or 0, order.get(id(r), ()), r.label))


def _display_value(cell: Stat | Missing | None, column: Column) -> float | None:
    return float(column.format(cell.mean)) if isinstance(cell, Stat) else None


def best_ids(table: Table, column: Column) -> set[int]:
    """Rows (by index) that no other row is significantly better than on ``column`` (paired bootstrap of their
    difference; without replicates, those with the best displayed mean): the column's rank-1 tier, so that on the
    ranked column bold is exactly rank 1. Rows at chance level and context columns never count, nor a value with a
    zero-width interval (:attr:`Stat.exact`: exact by construction, not a measurement) below the best mean. Empty when
    fewer than two rows have a value."""
    if column.statistic.context:
        return set()
    scored = [(i, row.cells.get(column.id)) for i, row in enumerate(table.rows) if not row.chance]
    scored = [(i, cell) for i, cell in scored if isinstance(cell, Stat)]
    if len(scored) < 2:
        return set()
    higher = column.statistic.higher_is_better
    scored.sort(key=lambda item: -item[1].mean if higher else item[1].mean)  # the best mean first: it beats most
    shown = _display_value(scored[0][1], column)
    chosen = set()
    for i, cell in scored:
        if cell.exact and _display_value(cell, column) != shown:
            continue
        if cell.replicates is None:
            if _display_value(cell, column) == shown:
                chosen.add(i)
            continue
        better = (other for j, other in scored if j != i and other.replicates is not None)  # as ``rank_rows``
        if not any(bootstrap.significantly_worse(other.replicates, cell.replicates, higher) for other in better):
            chosen.add(i)
    return chosen
