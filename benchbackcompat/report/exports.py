"""CSV and JSON exports of the leaderboard numbers (full precision, one row per method and column).

Every CSV cell is spreadsheet-safe (``spreadsheet_safe``): text that a spreadsheet would run as a formula (a method
named ``=HYPERLINK(...)``) is written with a leading apostrophe, as OWASP's advice on CSV injection has it.
"""
from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from benchbackcompat.report.grouping import row_config_hash
from benchbackcompat.report.table_data import Missing, Stat, Table
from benchbackcompat.report.stability import rank_ranges

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula (OWASP)
PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` with text that starts like a formula prefixed by an apostrophe, so that a spreadsheet shows it
    instead of running it; numbers, and text that is a plain number (``-1.5``, ``-2e-05``), are left as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


CSV_FIELDS = ["dataset", "preset", "scenario", "kind", "variant", "method", "params", "config_hash", "metric", "statistic",
              "higher_is_better", "mean", "std", "ci_low", "ci_high", "n", "seeds", "minutes_per_cell", "rank", "rank_low", "rank_high", "chance_level", "missing", "note"]


def table_dicts(tables: list[Table]) -> list[dict[str, Any]]:
    """Each table as the JSON export holds it; ``rank_range``: the 95% range of the row's rank over resamples of its
    seeds and queries (``stability.rank_ranges``), None for an unranked row."""
    ranges = {key: found for t in tables for key, found in rank_ranges(t).items()}
    return [{
        "dataset": t.dataset, "preset": t.preset, "scenario": t.scenario, "kind": t.kind, "variant": t.variant,
        "unranked": t.unranked, "description": t.config.get("description", ""),
        "columns": [{"id": c.id, "metric": c.metric, "statistic": c.statistic.key, "header": c.header,
                     "higher_is_better": c.statistic.higher_is_better} for c in t.columns],
        "rows": [{
            "method": row.method, "label": row.label, "params": row.params, "config_hash": row_config_hash(row),
            "minutes_per_cell": row.minutes, "rank": row.rank, "chance_level": bool(row.chance),
            "rank_range": list(ranges[id(row)]) if id(row) in ranges else None,
            "chance_reason": row.chance or None,
            "seeds": [r.seed for r in row.finished], "seeds_total": len(row.records), "notes": row.notes,
            "cells": {cid: _cell(cell) for cid, cell in row.cells.items()},
        } for row in t.rows],
    } for t in tables]


def _plain(value: Any) -> float | str:
    """A number as a built-in float (a NumPy scalar's repr, ``np.float64(1.5)``, is not a number to a CSV reader);
    "" for None."""
    return "" if value is None else float(value)


def _cell(cell: Stat | Missing) -> dict[str, Any]:
    if isinstance(cell, Missing):
        return {"missing": cell.text, "reason": cell.reason}
    return {"mean": float(cell.mean), "std": None if cell.std is None else float(cell.std),
            "interval": [float(v) for v in cell.interval] if cell.interval else None, "n": cell.n,
            "values": [float(v) for v in cell.values]}


def json_export(tables: list[Table], provenance: dict[str, str | int]) -> str:
    return json.dumps({"provenance": provenance, "tables": table_dicts(tables)}, indent=1, sort_keys=True) + "\n"


def csv_export(tables: list[Table]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for t in tables:
        ranges = rank_ranges(t)
        for row in t.rows:
            low, high = ranges.get(id(row), ("", ""))
            for column in t.columns:
                cell = row.cells[column.id]
                stat = cell if isinstance(cell, Stat) else None
                writer.writerow({name: spreadsheet_safe(value) for name, value in {
                    "dataset": t.dataset, "preset": t.preset, "scenario": t.scenario, "kind": t.kind, "variant": t.variant,
                    "method": row.label, "params": json.dumps(row.params, sort_keys=True),
                    "config_hash": row_config_hash(row), "metric": column.metric,
                    "statistic": column.statistic.key, "higher_is_better": column.statistic.higher_is_better,
                    "mean": _plain(stat.mean) if stat else "", "std": _plain(stat.std) if stat else "",
                    "n": stat.n if stat else 0, "seeds": len(row.finished),
                    "minutes_per_cell": _plain(row.minutes), "rank": row.rank if row.rank is not None else "",
                    "rank_low": low, "rank_high": high,
                    "ci_low": _plain(stat.interval[0]) if stat and stat.interval else "",
                    "ci_high": _plain(stat.interval[1]) if stat and stat.interval else "",
                    "chance_level": bool(row.chance),
                    "missing": cell.word if isinstance(cell, Missing) else "",
                    "note": "; ".join([cell.reason] if isinstance(cell, Missing) else [*row.notes, *[row.chance] * bool(row.chance)]),
                }.items()})
    return out.getvalue()

