"""Leaderboard tables from stored records (tabulate, GitHub Markdown)."""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from tabulate import tabulate

MULTI_COLUMNS = ("AC", "AA", "ACA")
UPDATE_COLUMNS = ("self", "cross", "p_up", "p_com")
HEADERS = {"AC": "AC", "AA": "AA", "ACA": "ACA", "self": "self", "cross": "cross", "p_up": "P_up", "p_com": "P_com"}


def mean_std(values: list[float]) -> str:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    if not finite:
        return "nan" if values else "-"
    if len(finite) == 1:
        return f"{finite[0]:.3f}" if abs(finite[0]) < 10 else f"{finite[0]:.2f}"
    mean, std = statistics.fmean(finite), statistics.stdev(finite)
    digits = 3 if abs(mean) < 10 else 2
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def leaderboard_tables(records: Iterable[dict[str, Any]]) -> str:
    """One Markdown table per (scenario, dataset, preset): rows = methods, columns = the papers' metrics."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(record["scenario"], record.get("dataset", "?"), record.get("preset", "?"))].append(record)
    pages = []
    for (scenario, dataset, preset), members in sorted(groups.items()):
        pages.append(_table(scenario, dataset, preset, members))
    return "\n\n".join(pages)


def _table(scenario: str, dataset: str, preset: str, records: list[dict[str, Any]]) -> str:
    finished = [r for r in records if r["status"] == "finished"]
    metrics = list(dict.fromkeys(m for r in finished for m in r["metrics"]))
    single = any(r["kind"] in ("ext-data", "ext-class", "new-arch", "both") for r in records)
    columns = [(m, c) for m in metrics for c in MULTI_COLUMNS]
    if single:
        columns = [(m, c) for m in metrics for c in ("AC", *UPDATE_COLUMNS)]
    by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_method[record["method"]].append(record)
    rows = []
    for method, runs in sorted(by_method.items()):
        done = [r for r in runs if r["status"] == "finished"]
        if not done:
            status = runs[0]["status"]
            rows.append([method, *(["nan" if status == "diverged" else "-"] * len(columns)), 0, f"{status}: {runs[0].get('reason', '')}"])
            continue
        cells = [mean_std([r["metrics"][m].get(c) for r in done if m in r["metrics"]]) for m, c in columns]
        rows.append([method, *cells, len(done), ""])
    headers = ["method", *(f"{HEADERS[c]} ({m})" for m, c in columns), "seeds", "note"]
    if all(not row[-1] for row in rows):
        headers, rows = headers[:-1], [row[:-1] for row in rows]
    title = f"### {scenario} · {dataset} · preset {preset}"
    return f"{title}\n\n{tabulate(rows, headers=headers, tablefmt='github', disable_numparse=True)}"
