"""Two sets of results side by side: per scenario, method, metric and statistic the means over the finished
seeds of A and of B, their difference B - A, the seeds behind each, and the configuration fields that differ
between A's and B's cells of the same scenario, method and seed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchbackcompat.frames import Paths, read_records, results_frame
from benchbackcompat.record import CellRecord

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_STATISTICS = ("AC", "AA", "ACA", "old_self", "self", "cross", "p_com", "p_up")
GROUP = ["scenario", "method", "metric", "statistic"]


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


def compare_results(a: Paths, b: Paths, statistics: tuple[str, ...] = DEFAULT_STATISTICS) -> tuple[pd.DataFrame, list[str]]:
    """The comparison table (one row per scenario, method, metric, statistic present in A or B) and notes on the
    cells: configuration differences, and cells that are in only one set or not finished in one."""
    records_a, records_b = read_records(a), read_records(b)
    frames = []
    for name, records in (("A", records_a), ("B", records_b)):
        frame = results_frame(records)
        frame = frame[(frame["status"] == "finished") & frame["statistic"].isin(statistics)]
        frames.append(frame.groupby(GROUP, sort=True).agg(**{name: ("value", "mean"), f"seeds {name}": ("seed", _seeds)}))
    table = frames[0].join(frames[1], how="outer").reset_index()
    table["B - A"] = table["B"] - table["A"]
    order = {s: i for i, s in enumerate(statistics)}
    table = table.sort_values(["scenario", "method", "metric", "statistic"], key=lambda c: c.map(order) if c.name == "statistic" else c)
    return table[[*GROUP, "A", "seeds A", "B", "seeds B", "B - A"]].reset_index(drop=True), cell_notes(records_a, records_b)


def cell_notes(records_a: list[CellRecord], records_b: list[CellRecord]) -> list[str]:
    by_label_a = {r.label: r for r in records_a}
    by_label_b = {r.label: r for r in records_b}
    notes = []
    for label in sorted(set(by_label_a) | set(by_label_b)):
        ra, rb = by_label_a.get(label), by_label_b.get(label)
        if ra is None or rb is None:
            notes.append(f"{label}: only in {'B' if ra is None else 'A'}")
            continue
        differences = config_differences(ra, rb)
        if differences:
            shown = "; ".join(differences[:4]) + (f"; and {len(differences) - 4} more" if len(differences) > 4 else "")
            notes.append(f"{label}: configuration differs: {shown}")
        for side, record in (("A", ra), ("B", rb)):
            if not record.finished:
                notes.append(f"{label}: {record.status} in {side}")
    return notes


def render(table: pd.DataFrame, notes: list[str], a: str, b: str) -> str:
    from tabulate import tabulate

    rows = [[*row[:4], _fmt(row[4]), row[5] if isinstance(row[5], str) else "-", _fmt(row[6]),
             row[7] if isinstance(row[7], str) else "-", _fmt(row[8], signed=True)] for row in table.itertuples(index=False)]
    text = f"A: {a}\nB: {b}\n" + tabulate(rows, headers=list(table.columns), tablefmt="github", disable_numparse=True)
    return text + ("\n\ncells:\n" + "\n".join(f"  {note}" for note in notes) if notes else "\n\nevery cell has the same configuration in A and B")


def _fmt(value: float, signed: bool = False) -> str:
    if value != value:  # NaN: missing on one side or not computable
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"
