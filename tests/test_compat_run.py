"""End to end: the compatibility methods train, evaluate and store in a single update and in CL2R."""
from __future__ import annotations

import pytest
import torch

from benchbackcompat.cli import main
from benchbackcompat.store import ResultStore
from benchbackcompat.testing.scenarios import tiny_run_args

pytestmark = pytest.mark.slow

TINY = tiny_run_args(epochs=2)


def test_bct_and_fan_are_more_compatible_than_independent(tmp_path):
    assert main(["run", "--out", str(tmp_path), *TINY, "--set", "train.epochs=3",
                 "--scenario", "ext-class", "--methods", "independent,bct,fan"]) == 0
    records = {r.method: r for r in ResultStore(tmp_path).records()}
    assert all(r.status == "finished" for r in records.values())
    cross = {m: r.metrics["cmc@1"].cross for m, r in records.items()}
    assert cross["bct"] > cross["independent"] + 10 and cross["fan"] > cross["independent"] + 10


def test_replay_methods_run_cl2r_and_fan_chains_its_adapters(tmp_path):
    args = ["run", "--out", str(tmp_path), *TINY, "--scenario", "cl2r", "--methods", "advbct,fan",
            "--set", "num_tasks=3", "--set", "initial_class_fraction=0.34"]
    assert main(args) == 0
    store = ResultStore(tmp_path)
    records = {r.method: r for r in store.records()}
    for record in records.values():
        C = record.matrices["top1"]
        assert record.status == "finished" and len(C) == 3 and all(C[2][k] == C[2][k] for k in range(3))
    fan_key = records["fan"].key
    state = store.load(store.step_path(fan_key, 2), torch.device("cpu"))["method_state"]
    assert {"adapter1.w1", "adapter2.w1"} <= set(state)  # both links of the chain 0 -> 1 -> 2 are stored
    advbct_model = store.load(store.step_path(records["advbct"].key, 2), torch.device("cpu"))["model"]
    assert not any(name.startswith("compat_auxiliary") for name in advbct_model)  # discriminator dropped
