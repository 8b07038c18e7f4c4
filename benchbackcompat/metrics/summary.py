"""The metric summary of a compatibility matrix, as a record stores it."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchbackcompat.metrics.compatibility import (
    MatrixLike,
    average_accuracy_curve,
    average_compatibility_accuracy,
    average_compatibility_curve,
)


def summarise(C: MatrixLike) -> dict[str, Any]:
    """AA, AC, ACA of a matrix (AC and ACA for T >= 2), the curves AA_curve and AC_curve ([AA_tau] and
    [AC_tau] for tau = 1..T on the leading tau x tau blocks), and self/cross/old_self for a single update.

    An entry that cannot be computed (NaN, e.g. feature sizes that differ after an architecture
    replacement) makes every metric whose block contains it None (not computable), never 0; the
    blocks before it keep their AC_tau/AA_tau (IAM-CL2R Table VII)."""
    M = np.asarray(C, dtype=np.float64)
    T = len(M)
    computable = [not np.isnan(M[:tau, :tau][np.tril_indices(tau)]).any() for tau in range(1, T + 1)]

    def known(values: list[float]) -> list[float | None]:
        return [v if ok and not math.isnan(v) else None for v, ok in zip(values, computable)]

    accuracy = known(average_accuracy_curve(M))
    values: dict[str, Any] = {"AA": accuracy[-1]}
    if T >= 2:
        compatibility = known(average_compatibility_curve(M))
        values["AC"] = compatibility[-1]
        values["ACA"] = average_compatibility_accuracy(M) if computable[-1] else None
        values["AA_curve"] = accuracy
        values["AC_curve"] = compatibility
    if T == 2:
        values.update(self=M[1][1].item(), cross=M[1][0].item(), old_self=M[0][0].item())
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in values.items()}
