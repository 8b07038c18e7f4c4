"""Update gain Gamma (CoReS Eq. 3), per pair in a multi-step scenario: (C[t][k] - C[k][k]) / (U[t] - C[k][k]),
U[t] the self-test of the model trained alone on step t (here: the independent baseline's diagonal)."""
from __future__ import annotations

import math

import pytest

from benchbackcompat.cli import main
from benchbackcompat.store import ResultStore
from benchbackcompat.testing.scenarios import tiny_run_args

TINY = tiny_run_args(epochs=1)


@pytest.mark.slow
def test_update_gain_per_pair_divides_by_the_upper_bound_of_the_query_step(tmp_path):
    args = ["run", "--out", str(tmp_path), *TINY, "--scenario", "multi-step", "--set", "num_models=3",
            "--set", "update_gain=true", "--methods", "independent,l2"]
    assert main(args) == 0
    records = {r.method: r for r in ResultStore(tmp_path).records()}
    U = records["independent"].matrices["cmc@1"]  # the models trained alone on each step: the upper bounds
    C, G = records["l2"].matrices["cmc@1"], records["l2"].update_gain["cmc@1"]
    for t in range(1, 3):
        for k in range(t):
            expected = (C[t][k] - C[k][k]) / (U[t][t] - C[k][k]) if U[t][t] != C[k][k] else math.nan
            assert (math.isnan(expected) and G[t][k] is None) or G[t][k] == pytest.approx(expected)
    assert all(G[t][k] is None or math.isnan(G[t][k]) for t in range(3) for k in range(t, 3))
    # with itself as the upper bound, the independent baseline's gain is its own P_com-like ratio
    Gi = records["independent"].update_gain["cmc@1"]
    assert Gi[1][0] == pytest.approx((U[1][0] - U[0][0]) / (U[1][1] - U[0][0]))
