"""A text summary of a cell's training curves (``benchbackcompat show``), without TensorBoard."""
from __future__ import annotations

import math

from tabulate import tabulate


def curve_summary(curves: dict[str, list[dict[str, float]]]) -> str:
    """One row per trained step: epochs, then first -> last value (and the minimum of each loss term)."""
    trained = {step: curve for step, curve in sorted(curves.items(), key=lambda item: int(item[0])) if curve}
    if not trained:
        return "no training curves (every step was loaded or shared)"
    keys = list(dict.fromkeys(key for curve in trained.values() for point in curve for key in point))
    rows = []
    for step, curve in trained.items():
        cells = []
        for key in keys:
            values = [point[key] for point in curve if key in point]
            if not values:
                cells.append("")
                continue
            text = f"{_number(values[0])} -> {_number(values[-1])}"
            cells.append(text if key == "lr" or len(values) == 1 else f"{text} (min {_number(min(values))})")
        rows.append([step, len(curve), *cells])
    return tabulate(rows, headers=["step", "epochs", *keys], tablefmt="github", disable_numparse=True)


def _number(value: float) -> str:
    return f"{value:.3g}" if value == 0 or not math.isfinite(value) or abs(value) < 1e-2 else f"{value:.3f}"
