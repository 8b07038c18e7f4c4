"""How each row's hyperparameters were chosen: the selected setting, the grid size, the rule and its
validation scores (a line per method), and optionally the whole grid (a table per method, the selected
row marked). Read from the ``selection`` block of the records of the selected setting."""
from __future__ import annotations

from typing import Any

from tabulate import tabulate

from benchbackcompat.report.table_data import Row, Table
from benchbackcompat.report.markdown import escape

RULES = ("Rules: `hbct` (single updates, HBCT Sec. 5) takes the highest P_com among the settings whose P_up is at "
         "most the tolerance below the reference's (else the highest P_up); `ac-then-aa` (sequences) the highest AC, then AA.")


def _selection(row: Row) -> dict[str, Any] | None:
    return next((r.selection for r in row.records if r.selection), None)


def _setting(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def selection_markdown(table: Table, grids: bool = False) -> str:
    """The selection summary of ``table`` ("" when no row comes from a grid), with the grid tables if ``grids``."""
    chosen = [(row, s) for row in table.rows if (s := _selection(row)) is not None]
    if not chosen:
        return ""
    lines = ["Hyperparameters selected on a validation split of the training data (the test set is never read while "
             "choosing). " + RULES, ""]
    for row, s in chosen:
        point = next(p for p in s["points"] if p["params"] == s["selected"])
        scores = ", ".join(f"{escape(name)} {_score(v)}" for name, v in point["validation"].items())
        split = s["validation"]
        lines.append(
            f"- {escape(row.label)}: **{escape(_setting(s['selected']))}** of {s['grid_size']} settings, rule "
            f"`{s['rule']}` on {escape(s['metric'])}, tolerance {s['tolerance']:g}: {escape(s['note'])}; validation "
            f"{scores} ({len(s['seeds'])} seed(s), {split['fraction']:.0%} of each class held out, split seed "
            f"{split['seed']}); grid cost {s['grid_seconds']:.0f} s"
        )
    if grids:
        for row, s in chosen:
            lines += ["", f"Grid of {escape(row.label)} (validation scores; ← selected):", "", grid_markdown(s)]
    return "\n".join(lines)


def grid_markdown(selection: dict[str, Any]) -> str:
    """One row per grid point: its values, the rule's validation scores, its cost and status."""
    keys = list(selection["grid"])
    names = list(selection["points"][0]["validation"]) if selection["points"] else []
    rows = []
    for point in selection["points"]:
        mark = "←" if point["params"] == selection["selected"] else ""
        rows.append([*(str(point["params"][k]) for k in keys), *(_score(point["validation"][n]) for n in names),
                     f"{point['seconds']:.0f}", "/".join(point["status"]), mark])
    headers = [*map(escape, keys), *(f"validation {escape(n)}" for n in names), "seconds", "status", "selected"]
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
