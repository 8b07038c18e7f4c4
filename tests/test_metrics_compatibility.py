from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import (
    average_accuracy,
    average_accuracy_at,
    average_accuracy_curve,
    average_compatibility,
    average_compatibility_accuracy,
    average_compatibility_at,
    average_compatibility_curve,
    backward_compatibility,
    empirical_compatibility,
    forward_compatibility,
    p_com,
    p_up,
    update_gain,
)

NAN = float("nan")

# d-Simplex-HOC, 7 tasks, the official IAM-CL2R code's notebook (CVPR 2024); fractions, upper triangle unused.
HOC7 = np.array([
    [.58892, 0, 0, 0, 0, 0, 0],
    [.59700, .61560, 0, 0, 0, 0, 0],
    [.63050, .65276, .69314, 0, 0, 0, 0],
    [.63336, .65298, .70626, .72374, 0, 0, 0],
    [.65006, .67872, .70754, .72114, .73828, 0, 0],
    [.64080, .67188, .71166, .72712, .74704, .76194, 0],
    [.63140, .66350, .72096, .73496, .75232, .76652, .77164],
])


def test_t2_compatible_pair_with_garbage_upper_triangle():
    C = [[50.0, 999.0], [60.0, 70.0]]
    assert average_compatibility(C) == 1.0
    assert average_accuracy(C) == pytest.approx(60.0)  # (50 + 60 + 70) / 3
    assert average_compatibility_accuracy(C) == pytest.approx(60.0)  # = C[1][0] when compatible
    assert empirical_compatibility(C).tolist() == [[False, False], [True, False]]
    assert backward_compatibility(C) == pytest.approx(10.0)
    assert forward_compatibility(C) == pytest.approx(-10.0)


def test_t2_tie_is_incompatible_only_when_strict():
    C = np.array([[50.0, 0.0], [50.0, 70.0]])
    assert average_compatibility(C) == 0.0
    assert average_compatibility_accuracy(C) == 0.0
    assert average_compatibility(C, strict=False) == 1.0
    assert average_compatibility_accuracy(C, strict=False) == pytest.approx(50.0)
    assert not empirical_compatibility(C)[1, 0]
    assert empirical_compatibility(C, strict=False)[1, 0]


def test_zero_cross_test_is_averaged_not_dropped():
    C = np.array([[50.0, 0.0], [0.0, 70.0]])
    assert average_accuracy(C) == pytest.approx(40.0)  # the official nanmean would give 60
    assert average_compatibility(C) == 0.0


def test_t1_has_no_pairs():
    C = np.array([[42.0]])
    assert math.isnan(average_compatibility(C))
    assert math.isnan(average_compatibility_accuracy(C))
    assert average_accuracy(C) == 42.0
    assert empirical_compatibility(C).tolist() == [[False]]
    assert math.isnan(backward_compatibility(C))
    assert math.isnan(forward_compatibility(C))


def test_hoc_notebook_matrix_t7():
    assert average_compatibility(HOC7) == pytest.approx(20 / 21)
    assert round(average_compatibility(HOC7), 3) == 0.952
    assert average_accuracy(HOC7) * 100 == pytest.approx(68.899, abs=5e-4)
    E = empirical_compatibility(HOC7)
    assert E.sum() == 20
    assert not E[4, 3]  # .72114 <= .72374, right after the task-5 replacement
    expected_aca = (HOC7[np.tril_indices(7, -1)].sum() - HOC7[4, 3]) / 21
    assert average_compatibility_accuracy(HOC7) == pytest.approx(expected_aca)
    assert average_accuracy_at(HOC7, 1) == pytest.approx(.58892)
    assert average_accuracy_at(HOC7, 2) == pytest.approx((.58892 + .59700 + .61560) / 3)
    assert average_compatibility_at(HOC7, 5) == pytest.approx(9 / 10)
    assert average_compatibility_at(HOC7, 4) == 1.0


def test_torch_and_numpy_inputs_agree():
    t = torch.tensor(HOC7, dtype=torch.float32)
    assert average_compatibility(t) == average_compatibility(HOC7)
    assert average_accuracy(t) == pytest.approx(average_accuracy(HOC7), rel=1e-6)
    assert isinstance(average_accuracy(t), float)
    E = empirical_compatibility(t)
    assert isinstance(E, np.ndarray) and E.dtype == bool
    assert (E == empirical_compatibility(HOC7)).all()


def _t31() -> tuple[np.ndarray, int, int]:
    T = 31
    C = np.full((T, T), -7.0)  # upper triangle: garbage that would break every metric if read
    for t in range(T):
        for k in range(t + 1):
            C[t, k] = 10 + t + 0.01 * k  # strictly increasing down every column: all pairs compatible
    ties = [(1, 0), (5, 2), (10, 3), (30, 29), (30, 0), (20, 19), (15, 7), (25, 24), (12, 11)]
    below = [(2, 1), (8, 6), (29, 28), (17, 3), (30, 15)]
    for t, k in ties:
        C[t, k] = C[k, k]
    for t, k in below:
        C[t, k] = C[k, k] - 1
    return C, len(ties), len(below)


def test_t31_constructed_matrix():
    C, n_ties, n_below = _t31()
    pairs = 31 * 30 // 2
    assert average_compatibility(C) == pytest.approx((pairs - n_ties - n_below) / pairs)
    assert average_compatibility(C, strict=False) == pytest.approx((pairs - n_below) / pairs)
    lower = [(t, k) for t in range(31) for k in range(t)]
    aca = sum(C[t, k] for t, k in lower if C[t, k] > C[k, k]) / pairs
    aca_ns = sum(C[t, k] for t, k in lower if C[t, k] >= C[k, k]) / pairs
    assert average_compatibility_accuracy(C) == pytest.approx(aca)
    assert average_compatibility_accuracy(C, strict=False) == pytest.approx(aca_ns)
    assert average_accuracy(C) == pytest.approx(sum(C[t, k] for t in range(31) for k in range(t + 1)) / 496)
    # an unbroken copy is fully compatible
    clean = np.array([[10 + t + 0.01 * k if k <= t else 0 for k in range(31)] for t in range(31)])
    assert average_compatibility(clean) == 1.0


def test_curves_match_block_metrics():
    C, _, _ = _t31()
    aa = average_accuracy_curve(C)
    ac = average_compatibility_curve(C)
    assert len(aa) == len(ac) == 31
    assert math.isnan(ac[0])
    assert ac[1] == 0.0  # (1, 0) is a tie
    assert average_compatibility_curve(C, strict=False)[1] == 1.0
    assert ac[-1] == average_compatibility(C)
    assert aa[-1] == pytest.approx(average_accuracy(C))
    assert aa[9] == pytest.approx(average_accuracy_at(C, 10))
    assert ac[20] == pytest.approx(average_compatibility_at(C, 21))


def test_bc_fc_by_hand():
    C = np.array([[10.0, 0, 0], [12.0, 20.0, 0], [15.0, 18.0, 30.0]])
    assert backward_compatibility(C) == pytest.approx(((15 - 10) + (18 - 20)) / 2)
    assert forward_compatibility(C) == pytest.approx(((12 - 20) + (18 - 30)) / 2)


def test_p_up_and_p_com_hbct_table1():
    # l2, Ext-data, CIFAR100 CMC@1: self 0.680, phi_* 0.716 -> -0.050 (table prints -0.049 from unrounded values)
    assert p_up(0.680, 0.716) == pytest.approx(-0.050, abs=5e-4)
    assert p_up(0.716, 0.716) == 0.0
    # HBCT Ext-data C100 CMC@1: cross 0.716, old 0.576, phi_*^L 0.722 -> 0.956
    assert p_com(0.716, 0.576, 0.722) == pytest.approx(0.956, abs=5e-3)
    assert p_com(0.7, 0.5, 0.9) == pytest.approx(0.5)
    assert p_com(1.0, 0.5, 0.9) == pytest.approx(1.25)  # above 1 is possible
    assert math.isnan(p_com(0.7, 0.5, 0.5))
    assert math.isnan(p_up(0.5, 0.0))


def test_update_gain_cores_eq3():
    assert update_gain(60.0, 50.0, 70.0) == pytest.approx(0.5)
    assert update_gain(45.0, 50.0, 70.0) == pytest.approx(-0.25)
    assert math.isnan(update_gain(60.0, 50.0, 50.0))


@pytest.mark.parametrize("bad", [np.zeros((2, 3)), np.zeros(3), np.zeros((0, 0))])
def test_non_square_matrix_is_a_user_error(bad):
    with pytest.raises(BenchError, match="square"):
        average_compatibility(bad)


def test_tau_out_of_range_is_a_user_error():
    with pytest.raises(BenchError, match="tau"):
        average_accuracy_at(HOC7, 8)
    with pytest.raises(BenchError, match="tau"):
        average_compatibility_at(HOC7, 0)


def test_summarise_a_full_sequence_by_hand():
    from benchbackcompat.metrics import summarise

    values = summarise([[50.0, 0.0, 0.0], [55.0, 60.0, 0.0], [40.0, 65.0, 70.0]])
    assert values["AA"] == pytest.approx(340 / 6)  # mean of the six lower-triangle entries
    assert values["AC"] == pytest.approx(2 / 3)  # 55 > 50 and 65 > 60 compatible, 40 > 50 not
    assert values["ACA"] == pytest.approx((55 + 65) / 3)  # compatible entries over all three pairs
    assert values["AA_curve"] == pytest.approx([50.0, 55.0, 340 / 6])
    assert values["AC_curve"][0] is None and values["AC_curve"][1:] == pytest.approx([1.0, 2 / 3])
    assert "cross" not in values
    single = summarise([[50.0, 0.0], [45.0, 70.0]])
    assert (single["self"], single["cross"], single["old_self"], single["AC"]) == (70.0, 45.0, 50.0, 0.0)
