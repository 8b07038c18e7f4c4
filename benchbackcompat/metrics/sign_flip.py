"""The exact paired sign-flip test over seeds (Fisher's randomisation test for paired differences).

Under the null hypothesis that each seed's difference d_i − null is symmetric about zero, every one of the 2^n
assignments of signs to |d_i − null| is equally likely. The two-sided p-value is the share of assignments whose
mean is at least as far from zero as the observed one. It needs no normal approximation, but it cannot go below
2 / 2^n: five seeds cannot give p < 1/16, six give at best 1/32.
"""
from __future__ import annotations

import itertools

import numpy as np

TOLERANCE = 1e-12  # means this close count as equal: a tie with the observed mean is "at least as far"


def sign_flip_p(differences: np.ndarray, null: float = 0.0) -> float:
    """Two-sided exact p-value of the paired differences against a mean difference of ``null``; NaN when there
    are none. Enumerates all 2^n sign assignments (n is a number of seeds: small)."""
    shifted = np.asarray(differences, dtype=np.float64) - null
    if not len(shifted) or not np.all(np.isfinite(shifted)):
        return float("nan")
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(shifted))))
    means = np.abs(signs @ shifted) / len(shifted)
    return float(np.mean(means >= abs(float(np.mean(shifted))) - TOLERANCE))


def smallest_p(seeds: int) -> float:
    """The smallest two-sided p-value the test can give with ``seeds`` paired differences."""
    return 2.0 / 2 ** seeds


def seeds_to_reach(level: float) -> int:
    """The fewest seeds whose smallest p-value is at most ``level``."""
    seeds = 1
    while smallest_p(seeds) > level:
        seeds += 1
    return seeds
