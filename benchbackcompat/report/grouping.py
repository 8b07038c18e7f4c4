"""Stored records -> tables: which records share a table and a row (no statistics, no formatting here).

A table is one (scenario, dataset, preset, scenario configuration); a row is one (method,
hyperparameters) with every seed of that configuration. Records of the same scenario name with
another configuration (e.g. ``--set train.epochs=1``) form their own table, labelled by the
fields that differ, so seeds are only ever pooled across identical configurations. Seeds of one configuration
computed on different data (two data fingerprints for the same data configuration, e.g. results merged from machines
whose libraries decode the images into other bytes) are kept apart too: one table per fingerprint, named by it, with a
warning. The cells are filled by ``report.seed_statistics`` and the rows ranked by ``report.ranking``.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from benchbackcompat import evaluations
from benchbackcompat.record import CellRecord, FinishedRecord, parse_record
from benchbackcompat.report.columns import columns_for
from benchbackcompat.report.ranking import rank_rows
from benchbackcompat.report.seed_statistics import fill_row
from benchbackcompat.report.table_data import Row, Table

DATA_DIGITS = 8  # hex digits that name a machine's data in a table's label: one "data ..." suffix fits a 160-character row


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


def seedless_config_hash(record: CellRecord, data: str = "") -> str:
    """12 hex digits of SHA-256 over the resolved configuration without the seed: the scenario and its
    configuration as tables tell them apart (:func:`table_config`), the method, its hyperparameters, the search
    that chose them and, where seeds of one configuration were computed on different data, the short data
    fingerprint ``data`` (:func:`_data_apart`). Two cells with the same hash differ only in their seed (or the code
    that computed them)."""
    identity = [record.role, record.scenario, table_config(record.config), *_row_key(record)] + ([data] if data else [])
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]



def row_config_hash(row: Row) -> str:
    """The :func:`seedless_config_hash` of a row's cells (one per row; "" for a row without records)."""
    return seedless_config_hash(row.records[0], row.data) if row.records else ""

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
    return [(labels[id(r)][0], seedless_config_hash(r, labels[id(r)][1])) if id(r) in labels
            else ("validation grid", seedless_config_hash(r)) for r in records]


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
            for key in evaluations.statistics(r, m)}
    columns = columns_for(first.kind, metrics, held)
    rows = _rows(records)
    for row in rows:
        row.data = data
        fill_row(row, columns)
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
