"""The engine's list of a cell's shared models (``engine.shared.shared_models``, which benchmarks/grid_cost.py prices)
is what a run trains or loads: every cell's record names exactly the listed keys, and the store holds exactly the
models of those keys."""
from __future__ import annotations

import pytest
import torch

from benchbackcompat.cli import main
from benchbackcompat.engine.shared import shared_models
from benchbackcompat.execution.plan import assign_fingerprints, make_plan
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.execution.presets import resolve_run
from benchbackcompat.store import ResultStore

TINY = ["train.epochs=1", "data.train_per_class=6", "data.test_per_class=2", "train.batch_size=32"]
RUNS = [  # (scenario, methods, settings): a single update (standard old model or own, reference), a sequence with
    # upper bounds (update_gain), a scenario with models pretrained elsewhere
    ("ext-class", ["l2", "hoc", "independent"], []),
    ("multi-step", ["l2", "independent"], ["num_models=4", "update_gain=true"]),
    ("iam-cl2r", ["er"], ["num_tasks=2", "initial_class_fraction=0.5", "replacements=[2]", "pretrain_classes=[10,20]",
                          "pretrain.epochs=1"]),
]


@pytest.mark.slow
def test_records_name_the_listed_shared_models_and_the_store_holds_no_other(tmp_path):
    listed: set[str] = set()
    for scenario, methods, settings in RUNS:
        assignments = TINY + settings
        sets = [arg for a in assignments for arg in ("--set", a)]
        assert main(["run", "--scenario", scenario, "--methods", ",".join(methods), "--out", str(tmp_path), *sets]) == 0
        plan = make_plan(resolve_run(preset="quick", scenarios=[scenario], methods=methods, seeds=[0],
                                     assignments=assignments), PluginHost())
        data_of = assign_fingerprints(plan, torch.device("cpu"))
        records = {record.key: record for record in ResultStore(tmp_path).records()}
        for cell in plan.cells:
            config, method = cell.scenario.config, plan.methods[cell.method]
            data = data_of(config)
            keys = {m.key for m in shared_models(method, config.steps(data.num_classes), config, data, cell.seed)}
            assert records[cell.key].status == "finished", cell.label
            assert set(records[cell.key].shared_models) == keys, cell.label
            listed |= keys
    stored = {path.name.removesuffix(".pt") for path in (tmp_path / "models").glob("*.pt")}
    assert stored == listed and len(listed) >= 6
