"""The benchmark scripts run against today's API (they are not imported by the package, so nothing else would
notice when it changes): grid_cost counts each shared model once; calibrate reads a record's self-tests."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from benchbackcompat.plugin_host import PluginHost
from benchbackcompat.record import FinishedRecord
from benchbackcompat.scenarios.data import load_scenario_data

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
TINY = ["data.num_classes=6", "data.train_per_class=10", "data.test_per_class=4", "data.open_classes=4",
        "data.pretrain_classes=8", "train.epochs=1"]


def script(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_grid_cost_counts_each_shared_model_once():
    grid_cost = script("grid_cost")
    host = PluginHost()
    counted = {}
    for methods in ("independent", "independent,l2"):
        plan = grid_cost.plan_of("quick", "ext-class", methods, "0", host, TINY)
        work = grid_cost.grid_work(plan, lambda s: load_scenario_data(s, plan.run.cache_dir, torch.device("cpu")))
        counted[methods] = (work["ext-class"].models, dict(work["ext-class"].train))
    # 6 classes x 10 images (16x16, the quick preset), 1 epoch: the old model sees 3 classes (30 images), the new
    # one all 60. independent's two models are the shared standard ones (its reference is the second); l2 adds only
    # its own new model.
    assert counted["independent"] == (2, {("convnet-s", 16): 30 + 60})
    assert counted["independent,l2"] == (3, {("convnet-s", 16): 30 + 60 + 60})


def test_calibrate_reads_the_self_tests_of_a_record():
    calibrate = script("calibrate")
    record = FinishedRecord(key="k", label="l", scenario="ext-class", kind="ext-class", method="hoc", seed=0,
                            status="finished", matrices={"cmc@1": [[40.0, None], [35.0, 60.0]]},
                            metrics={"cmc@1": {"old_self": 42.0, "reference_self": 65.0}})
    assert calibrate.self_tests(record, "cmc@1") == {"model 0": 40.0, "model 1": 60.0, "old_self": 42.0,
                                                     "reference_self": 65.0}
