"""Two sets of results side by side: per scenario, variant, method, metric and statistic the means over the
finished seeds of A and of B (never across configurations), their difference B - A, the seeds and the
configuration hash behind each, and the configuration fields that differ between A's and B's cells of the
same scenario, variant, method and seed."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from benchbackcompat.metrics import bootstrap
from benchbackcompat.results.frames import Paths, read_records, results_frame
from benchbackcompat.record import CellRecord, FinishedRecord
from benchbackcompat.report.grouping import configuration_labels
from benchbackcompat.report.seed_statistics import record_replicates

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_STATISTICS = ("AC", "AA", "ACA", "old_self", "self", "cross", "p_com", "p_up")
GROUP = ["scenario", "variant", "method", "metric", "statistic"]
PAIR = ["scenario", "pair", "method", "metric", "statistic"]  # "pair": the variant that pairs A's and B's cells


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"train": {"epochs": 2}}`` -> ``{"train.epochs": 2}``."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in flatten(item, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): value}


def config_differences(a: CellRecord, b: CellRecord) -> list[str]:
    """``train.epochs 2 -> 3`` for every field of the scenario configuration, the method's hyperparameters and
    the dataset that differs between two records of the same cell label."""
    left = flatten({"config": a.config, "params": a.params, "dataset": a.dataset})
    right = flatten({"config": b.config, "params": b.params, "dataset": b.dataset})
    return [f"{key.removeprefix('config.')} {left.get(key)!r} -> {right.get(key)!r}"
            for key in sorted(set(left) | set(right)) if left.get(key) != right.get(key)]


def _seeds(values: pd.Series) -> str:
    return ",".join(str(s) for s in sorted(values))


def method_variants(records: list[CellRecord]) -> list[str]:
    """The variant that pairs each record with the other side's: its leaderboard variant where its scenario and
    method have several configurations on its side, else "" (one configuration each side: A's and B's are
    compared, and the notes name the fields that differ)."""
    labels = configuration_labels(records)
    hashes: dict[tuple[str, str], set[str]] = {}
    for record, (_, digest) in zip(records, labels):
        hashes.setdefault((record.scenario, record.method), set()).add(digest)
    return [variant if len(hashes[(r.scenario, r.method)]) > 1 else "" for r, (variant, _) in zip(records, labels)]


def _side(records: list[CellRecord], name: str, statistics: tuple[str, ...]) -> pd.DataFrame:
    """One side's means over seeds, one row per configuration (pairing variant and hash) and statistic, with the
    side's own variant label (the frame's)."""
    frame = results_frame(records)
    frame["pair"] = frame["key"].map(dict(zip((r.key for r in records), method_variants(records))))
    frame = frame[(frame["status"] == "finished") & frame["statistic"].isin(statistics)]
    grouped = frame.groupby([*PAIR, "config_hash"], sort=True).agg(
        **{name: ("value", "mean"), f"seeds {name}": ("seed", _seeds), f"variant {name}": ("variant", "first"),
           f"gated {name}": ("gated", _reason)})
    return grouped.reset_index().rename(columns={"config_hash": f"config {name}"})


def _reason(values: pd.Series) -> str:
    """Why the leaderboard does not show a configuration's number ("" where it does; one gate per configuration)."""
    return next((v for v in values if isinstance(v, str) and v), "")


def _samples(records: list[CellRecord], statistics: tuple[str, ...]) -> dict[tuple, bootstrap.SeedSample]:
    """Per pairing group (``PAIR``): the finished seeds' values with their query-bootstrap replicates (seeds whose
    record stored no per-query outcomes are left out)."""
    found: dict[tuple, tuple[list, list, list]] = {}
    for record, pair in zip(records, method_variants(records)):
        if not isinstance(record, FinishedRecord):
            continue
        replicates = record_replicates(record)
        for metric, summary in record.metrics.items():
            for statistic, value in summary.scalars().items():
                rep = replicates.get(metric, {}).get(statistic)
                if statistic in statistics and rep is not None and isinstance(value, (int, float)) and math.isfinite(value):
                    values, reps, seeds = found.setdefault((record.scenario, pair, record.method, metric, statistic),
                                                           ([], [], []))
                    values.append(float(value)), reps.append(rep), seeds.append(record.seed)
    return {group: bootstrap.over_seeds(*sample) for group, sample in found.items()}


def _paired_interval(a: bootstrap.SeedSample | None, b: bootstrap.SeedSample | None) -> tuple[float, float, str]:
    """The 95% interval of B - A paired seed by seed over the seeds both sides hold (``SeedSample.__sub__``; the same
    seed resamples the same queries), and those seeds; NaN without a common seed."""
    if a is None or b is None:
        return math.nan, math.nan, ""
    with np.errstate(invalid="ignore"):  # undefined resamples (P_com of a resample whose update is 0) stay NaN
        difference = b - a
        if not difference.seeds:
            return math.nan, math.nan, ""
        low, high = bootstrap.interval(difference)
    return low, high, ",".join(map(str, sorted(difference.seeds)))


def _filtered(records: list[CellRecord], scenarios: tuple[str, ...], methods: tuple[str, ...]) -> list[CellRecord]:
    return [r for r in records if (not scenarios or r.scenario in scenarios) and (not methods or r.method in methods)]


def compare_results(a: Paths, b: Paths, statistics: tuple[str, ...] = DEFAULT_STATISTICS, *,
                    scenarios: tuple[str, ...] = (), methods: tuple[str, ...] = ()) -> tuple[pd.DataFrame, list[str]]:
    """The comparison table (one row per scenario, variant, method, metric, statistic present in A or B) and notes
    on the cells: configuration differences, and cells that are in only one set or not finished in one. Each
    side's seeds pool only within one configuration (:func:`method_variants`), and a row pairs A's and B's
    configurations of the same variant (``config A``/``config B``: their hashes; ``variant``: the label that
    ``load_results`` gives each side, "A: ..; B: .." where they differ). ``B - A low``/``high``: the 95% interval
    of the difference paired over the seeds both hold (``paired seeds``). ``scenarios``/``methods``: only these
    (empty: all)."""
    every_a, every_b = read_records(a), read_records(b)
    _known(statistics, known_statistics(), "statistic", "(`--statistics`)")
    _known(scenarios, {r.scenario for r in every_a + every_b}, "scenario", f"in {a} or {b}")
    _known(methods, {r.method for r in every_a + every_b}, "method", f"in {a} or {b}")
    records_a = _filtered(every_a, scenarios, methods)
    records_b = _filtered(every_b, scenarios, methods)
    table = _side(records_a, "A", statistics).merge(_side(records_b, "B", statistics), on=PAIR, how="outer")
    table["B - A"] = table["B"] - table["A"]
    samples_a, samples_b = _samples(records_a, statistics), _samples(records_b, statistics)
    shown = (table["A"].notna() & table["B"].notna()).tolist()  # a number the leaderboard hides has no interval either
    intervals = [_paired_interval(samples_a.get(group), samples_b.get(group)) if ok else (math.nan, math.nan, "")
                 for group, ok in zip(table[PAIR].itertuples(index=False, name=None), shown)]
    table["B - A low"], table["B - A high"], table["paired seeds"] = (list(column) for column in zip(*intervals)) \
        if intervals else ([], [], [])
    table["variant"] = [_label(va, vb) for va, vb in zip(table["variant A"], table["variant B"])]
    order = {s: i for i, s in enumerate(statistics)}
    table = table.sort_values(PAIR, key=lambda c: c.map(order) if c.name == "statistic" else c)
    columns = [*GROUP, "A", "seeds A", "B", "seeds B", "B - A", "B - A low", "B - A high", "paired seeds", "config A",
               "config B", "gated A", "gated B"]
    table[["gated A", "gated B"]] = table[["gated A", "gated B"]].fillna("")
    return table[columns].reset_index(drop=True), cell_notes(records_a, records_b)


def known_statistics() -> set[str]:
    """Every statistic a results frame can hold: the leaderboard's columns and a record's stored scalars."""
    from benchbackcompat.record import MetricSummary
    from benchbackcompat.report.columns import STATISTICS

    return {*STATISTICS, *(name for name in MetricSummary.model_fields if not name.endswith("_curve"))}


def _known(asked: tuple[str, ...], known: set[str], kind: str, where: str) -> None:
    """One line naming the first of ``asked`` that is not ``known``, with the closest known name."""
    from benchbackcompat.errors import UnknownNameError

    for name in asked:
        if name not in known:
            raise UnknownNameError(f"{kind} {where}:", name, known)


def _label(a: Any, b: Any) -> str:
    a, b = (v if isinstance(v, str) else None for v in (a, b))
    if a is None or b is None or a == b:
        return a if a is not None else (b or "")
    return f"A: {a or '-'}; B: {b or '-'}"


def cell_notes(records_a: list[CellRecord], records_b: list[CellRecord]) -> list[str]:
    """Per cell (label and variant, as the table pairs them): configuration differences, cells in one set only,
    unfinished cells."""
    by_cell_a, by_cell_b = ({(r.label, variant): r for r, variant in zip(records, method_variants(records))}
                            for records in (records_a, records_b))
    notes = []
    for label, variant in sorted(set(by_cell_a) | set(by_cell_b)):
        ra, rb = by_cell_a.get((label, variant)), by_cell_b.get((label, variant))
        name = f"{label} [{variant}]" if variant else label
        if ra is None or rb is None:
            notes.append(f"{name}: only in {'B' if ra is None else 'A'}")
            continue
        differences = config_differences(ra, rb)
        if differences:
            shown = "; ".join(differences[:4]) + (f"; and {len(differences) - 4} more" if len(differences) > 4 else "")
            notes.append(f"{name}: configuration differs: {shown}")
        for side, record in (("A", ra), ("B", rb)):
            if not record.finished:
                notes.append(f"{name}: {record.status} in {side}")
    return notes


def render(table: pd.DataFrame, notes: list[str], a: str, b: str) -> str:
    from tabulate import tabulate

    def text(value: Any) -> str:
        return value if isinstance(value, str) and value else "-"

    def interval(low: float, high: float) -> str:
        return "-" if low != low else f"[{low:+.2f}, {high:+.2f}]"

    gates: dict[str, list[str]] = {}
    for row in table.itertuples(index=False):
        for side, why in (("A", row[15]), ("B", row[16])):
            if why:
                gates.setdefault(why, []).append(f"{row.scenario}/{row.method} {row.metric} {row.statistic} in {side}")
    rows = [[row.scenario, row.variant, row.method, row.metric, row.statistic, _fmt(row.A, gated=row[15]),
             text(row[6]), _fmt(row.B, gated=row[16]), text(row[8]), _fmt(row[9], signed=True),
             interval(row[10], row[11]), text(row[12]), text(row[13]), text(row[14])]
            for row in table.itertuples(index=False)]
    headers = [*GROUP, "A", "seeds A", "B", "seeds B", "B - A", "95% CI (paired)", "paired seeds", "config A", "config B"]
    text_table = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
    out = f"A: {a}\nB: {b}\n" + text_table
    out += ("\n\nB - A: mean of B's seeds minus mean of A's; its 95% interval pairs the seeds both hold (the same seed "
            "scores the same queries), over the query bootstrap and the seeds")
    out += "".join(f"\n–: not shown, as on the leaderboard ({'; '.join(where[:3])}"
                   f"{f'; and {len(where) - 3} more' if len(where) > 3 else ''}): {why}" for why, where in gates.items())
    return out + ("\n\ncells:\n" + "\n".join(f"  {note}" for note in notes) if notes else "\n\nevery cell has the same configuration in A and B")


def _fmt(value: float, signed: bool = False, gated: str = "") -> str:
    if gated:  # not shown on the leaderboard: the reason follows the table
        return "–"
    if value != value:  # NaN: missing on one side or not computable
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"
