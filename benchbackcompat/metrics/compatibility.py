"""Compatibility-matrix metrics: ECC, AC, AA, ACA, their curves, P_com, P_up, update gain, BC, FC.

The matrix ``C`` is square (T x T); ``C[t][k]`` with ``k <= t`` is the accuracy with query
features from model t and gallery features from model k (diagonal: self-tests, below it:
cross-tests). The upper triangle is ignored. Values keep the caller's units (the benchmark
uses %); AC is a fraction. Accepted inputs: numpy arrays, torch tensors, nested sequences.
Every value in the lower triangle is real: a 0 is an accuracy of 0, not a missing entry.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

import numpy as np

from benchbackcompat.errors import BenchError

if TYPE_CHECKING:  # torch is not imported to read records (show, status, leaderboard stay light)
    import torch

MatrixLike = Union[np.ndarray, "torch.Tensor", Sequence[Sequence[float]]]


def _as_matrix(C: MatrixLike) -> np.ndarray:
    if type(C).__module__.startswith("torch"):  # a tensor: to a float64 array on the CPU
        C = C.detach().cpu().double().numpy()
    M = np.asarray(C, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise BenchError(f"compatibility matrix must be a non-empty square T x T matrix, got shape {M.shape}")
    return M


def _block(C: MatrixLike, tau: int) -> np.ndarray:
    M = _as_matrix(C)
    if not 1 <= tau <= M.shape[0]:
        raise BenchError(f"tau must be between 1 and T={M.shape[0]}, got {tau}")
    return M[:tau, :tau]


def _num_pairs(T: int) -> int:
    return T * (T - 1) // 2


def empirical_compatibility(C: MatrixLike, strict: bool = True) -> np.ndarray:
    """Empirical compatibility criterion (BCT; CoReS Eq. 5) for every pair.

    ``E[t, k] = C[t, k] > C[k, k]`` for ``t > k`` (``>=`` when ``strict=False``, the CoReS/CL2R
    code's rule); False on and above the diagonal.
    """
    M = _as_matrix(C)
    self_test = np.diag(M)[None, :]
    better = M > self_test if strict else M >= self_test
    return better & np.tri(M.shape[0], k=-1, dtype=bool)


def average_compatibility(C: MatrixLike, strict: bool = True) -> float:
    """AC = 2/(T(T-1)) * sum_{t>k} 1[C[t,k] > C[k,k]] (CoReS Eq. 7), a fraction in [0, 1].

    T = 1 has no pair: returns ``nan``.
    """
    M = _as_matrix(C)
    pairs = _num_pairs(M.shape[0])
    if pairs == 0:
        return float("nan")
    return float(empirical_compatibility(M, strict).sum() / pairs)


def average_accuracy(C: MatrixLike) -> float:
    """AA = 2/(T(T+1)) * sum_{t>=k} C[t,k] (CoReS Eq. 8, "AM" in code): mean of the lower triangle.

    Unlike the official IAM-CL2R/CoReS code, zeros are averaged as real accuracies.
    """
    M = _as_matrix(C)
    return float(M[np.tril_indices(M.shape[0])].mean())


def average_compatibility_accuracy(C: MatrixLike, strict: bool = True) -> float:
    """ACA = 2/(T(T-1)) * sum_{t>k} C[t,k] * 1[C[t,k] > C[k,k]] (Stationary-HOC; PSP/LSP).

    Normalised by all T(T-1)/2 pairs, not by the compatible ones. T = 1 returns ``nan``.
    """
    M = _as_matrix(C)
    pairs = _num_pairs(M.shape[0])
    if pairs == 0:
        return float("nan")
    return float(M[empirical_compatibility(M, strict)].sum() / pairs)


def average_compatibility_at(C: MatrixLike, tau: int, strict: bool = True) -> float:
    """AC_tau: AC on the leading tau x tau block (models 1..tau); ``nan`` for tau = 1."""
    return average_compatibility(_block(C, tau), strict)


def average_accuracy_at(C: MatrixLike, tau: int) -> float:
    """AA_tau: AA on the leading tau x tau block (models 1..tau)."""
    return average_accuracy(_block(C, tau))


def average_accuracy_curve(C: MatrixLike) -> list[float]:
    """[AA_1, ..., AA_T]; entry ``tau - 1`` is AA_tau."""
    M = _as_matrix(C)
    return [average_accuracy(M[:tau, :tau]) for tau in range(1, M.shape[0] + 1)]


def average_compatibility_curve(C: MatrixLike, strict: bool = True) -> list[float]:
    """[AC_1, ..., AC_T]; entry ``tau - 1`` is AC_tau, so the first entry is ``nan``."""
    M = _as_matrix(C)
    return [average_compatibility(M[:tau, :tau], strict) for tau in range(1, M.shape[0] + 1)]


def _ratio(num: float, den: float) -> float:
    return float("nan") if den == 0 else num / den


def p_com(cross: float, old_self: float, reference_self: float) -> float:
    """P_com = (M(new Q; old G) - M(old Q; old G)) / (M(ref Q; ref G) - M(old Q; old G)) (HBCT Eq. 14).

    ``reference_self`` is the self-test of the independently trained new model (phi_*).
    1.0 means the cross-test matches the unaligned new model; ``nan`` if the denominator is 0.
    """
    return _ratio(float(cross) - float(old_self), float(reference_self) - float(old_self))


def p_up(new_self: float, reference_self: float) -> float:
    """P_up = (M(new Q; new G) - M(ref Q; ref G)) / M(ref Q; ref G) (HBCT).

    HBCT's Eq. 15 prints the cross-test in the numerator, but every value in its tables uses
    the new model's self-test (e.g. l2 Ext-data: (0.680 - 0.716) / 0.716 = -0.050), so this
    uses the self-test. ``nan`` if ``reference_self`` is 0.
    """
    return _ratio(float(new_self) - float(reference_self), float(reference_self))


def update_gain(cross: float, old_self: float, upper_bound_self: float) -> float:
    """Update gain Gamma = (M(new Q; old G) - M(old Q; old G)) / (M(~new Q; ~new G) - M(old Q; old G)).

    CoReS Eq. 3; ``upper_bound_self`` is the self-test of the best model obtainable with
    re-indexing. ``nan`` if the denominator is 0.
    """
    return _ratio(float(cross) - float(old_self), float(upper_bound_self) - float(old_self))


def backward_compatibility(C: MatrixLike) -> float:
    """BC = mean_{i<T-1} (C[T-1][i] - C[i][i]) (CL2R): last model's queries against every older gallery.

    T = 1 returns ``nan``.
    """
    M = _as_matrix(C)
    T = M.shape[0]
    if T == 1:
        return float("nan")
    idx = np.arange(T - 1)
    return float((M[T - 1, idx] - M[idx, idx]).mean())


def forward_compatibility(C: MatrixLike) -> float:
    """FC = mean_{i>=1} (C[i][i-1] - C[i][i]) (CL2R): each model against its predecessor's gallery.

    T = 1 returns ``nan``.
    """
    M = _as_matrix(C)
    T = M.shape[0]
    if T == 1:
        return float("nan")
    idx = np.arange(1, T)
    return float((M[idx, idx - 1] - M[idx, idx]).mean())
