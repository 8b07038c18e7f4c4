"""Two sets of results side by side: per scenario, variant, method, metric and statistic the means over the
finished seeds of A and of B (never across configurations), their difference B - A, the seeds and the
configuration hash behind each, and the configuration fields that differ between A's and B's cells of the
same scenario, variant, method and seed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchbackcompat.results.frames import Paths, read_records, results_frame
from benchbackcompat.record import CellRecord
from benchbackcompat.report.aggregate import configuration_labels

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_STATISTICS = ("AC", "AA", "ACA", "old_self", "self", "cross", "p_com", "p_up")
GROUP = ["scenario", "variant", "method", "metric", "statistic"]


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
    """One side's means over seeds, one row per configuration (variant and hash) and statistic."""
    frame = results_frame(records)
    variants = dict(zip((r.key for r in records), method_variants(records)))
    frame["variant"] = frame["key"].map(variants)
    frame = frame[(frame["status"] == "finished") & frame["statistic"].isin(statistics)]
    grouped = frame.groupby([*GROUP, "config_hash"], sort=True).agg(
        **{name: ("value", "mean"), f"seeds {name}": ("seed", _seeds)})
    return grouped.reset_index().rename(columns={"config_hash": f"config {name}"})


def compare_results(a: Paths, b: Paths, statistics: tuple[str, ...] = DEFAULT_STATISTICS) -> tuple[pd.DataFrame, list[str]]:
    """The comparison table (one row per scenario, variant, method, metric, statistic present in A or B) and notes
    on the cells: configuration differences, and cells that are in only one set or not finished in one. Each
    side's seeds pool only within one configuration (:func:`method_variants`), and a row pairs A's and B's
    configurations of the same variant (``config A``/``config B``: their hashes)."""
    records_a, records_b = read_records(a), read_records(b)
    table = _side(records_a, "A", statistics).merge(_side(records_b, "B", statistics), on=GROUP, how="outer")
    table["B - A"] = table["B"] - table["A"]
    order = {s: i for i, s in enumerate(statistics)}
    table = table.sort_values(GROUP, key=lambda c: c.map(order) if c.name == "statistic" else c)
    return (table[[*GROUP, "A", "seeds A", "B", "seeds B", "B - A", "config A", "config B"]].reset_index(drop=True),
            cell_notes(records_a, records_b))


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
        return value if isinstance(value, str) else "-"

    rows = [[*row[:5], _fmt(row[5]), text(row[6]), _fmt(row[7]), text(row[8]), _fmt(row[9], signed=True),
             text(row[10]), text(row[11])] for row in table.itertuples(index=False)]
    text_table = tabulate(rows, headers=list(table.columns), tablefmt="github", disable_numparse=True)
    out = f"A: {a}\nB: {b}\n" + text_table
    return out + ("\n\ncells:\n" + "\n".join(f"  {note}" for note in notes) if notes else "\n\nevery cell has the same configuration in A and B")


def _fmt(value: float, signed: bool = False) -> str:
    if value != value:  # NaN: missing on one side or not computable
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"
