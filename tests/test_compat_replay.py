"""Multi-step with a replay memory: the "-ER" variants train on the new classes plus the memory."""
from __future__ import annotations

import pytest

from benchbackcompat.cli import main
from benchbackcompat.scenarios.kinds import MultiStep
from benchbackcompat.store import ResultStore


def test_multi_step_memory_trains_new_classes_with_replay():
    plain = MultiStep(num_models=3).steps(6)
    assert [s.classes for s in plain] == [(0, 2), (0, 4), (0, 6)] and not any(s.replay for s in plain)
    er = MultiStep(num_models=3, memory_per_class=5).steps(6)
    assert [s.classes for s in er] == [(0, 2), (2, 4), (4, 6)] and [s.replay for s in er] == [False, True, True]
    assert [s.seen_classes for s in er] == [2, 4, 6]


@pytest.mark.slow
def test_bct_er_runs_multi_step_with_memory(tmp_path):
    assert main(["run", "--out", str(tmp_path), "--scenario", "multi-step", "--methods", "bct",
                 "--set", "data.num_classes=6", "--set", "data.train_per_class=30", "--set", "data.test_per_class=8",
                 "--set", "data.open_classes=4", "--set", "data.pretrain_classes=8", "--set", "train.epochs=1",
                 "--set", "train.batch_size=32", "--set", "model.embedding_dim=16",
                 "--set", "num_models=3", "--set", "memory_per_class=5"]) == 0
    (record,) = ResultStore(tmp_path).records()
    assert record.status == "finished" and len(record.matrices["cmc@1"]) == 3
    assert ResultStore(tmp_path).curves(record.key)["2"][0]["influence"] > 0  # the old classifier regularised the memory + new data
