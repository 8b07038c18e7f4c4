"""The benchmark scripts run against today's API (they are not imported by the package, so nothing else would
notice when it changes): grid_cost counts each shared model once; feature_drift measures saved models; every script
imports only the public API."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.scenarios.data import load_scenario_data
from benchbackcompat.tooling import plan_grid

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
    counted = {}
    for methods in ("independent", "independent,l2"):
        plan = plan_grid("quick", "ext-class", methods, "0", assignments=TINY)
        work = grid_cost.grid_work(plan)
        counted[methods] = (work["ext-class"].models, dict(work["ext-class"].train))
    # 6 classes x 10 images (16x16, the quick preset), 1 epoch: the old model sees 3 classes (30 images), the new
    # one all 60. independent's two models are the shared standard ones (its reference is the second); l2 adds only
    # its own new model.
    assert counted["independent"] == (2, {("convnet-s", 16): 30 + 60})
    assert counted["independent,l2"] == (3, {("convnet-s", 16): 30 + 60 + 60})


def test_grid_cost_stretches_epochs_to_the_step_floor_and_skips_cells_that_train_alike():
    grid_cost = script("grid_cost")

    def work(preset: str, scenarios: str, assignments: list[str]):
        plan = plan_grid(preset, scenarios, "independent", "0", assignments=TINY + assignments)
        return grid_cost.grid_work(plan)

    # min_steps=4 at 1 batch an epoch: 4 epochs each, old model 4 x 30 images, new model 4 x 60
    assert dict(work("quick", "ext-class", ["train.min_steps=4"])["ext-class"].train) == {("convnet-s", 16): 120 + 240}
    # multi-step-seen differs from multi-step only in what it scores: it loads multi-step's steps, trains nothing
    sequence = work("cpu", "multi-step,multi-step-seen", ["train.min_steps=0", "data.num_classes=10"])
    assert sequence["multi-step"].models == 5 and sequence["multi-step-seen"].models == 0
    assert not sequence["multi-step-seen"].train and sequence["multi-step-seen"].extract == sequence["multi-step"].extract


def test_feature_drift_measures_saved_models_and_never_trains(tmp_path):
    from benchbackcompat.engine.cell import CellRunner
    from benchbackcompat.errors import BenchError
    from benchbackcompat.execution.plan import make_plan
    from benchbackcompat.execution.presets import resolve_run
    from benchbackcompat.store import ResultStore

    drift = script("feature_drift")
    # pairs of different classes: (a, b) cos 0, (a, c) cos 1, both ways -> mean 0.5
    assert drift.other_class_cosine(torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]]), torch.tensor([0, 1, 1])) == 0.5
    run = resolve_run(preset="quick", scenarios=["ext-class"], methods=["l2"], seeds=[0], assignments=TINY)
    plan = make_plan(run, PluginHost())
    data = load_scenario_data(plan.cells[0].scenario.config, run.cache_dir, torch.device("cpu"))
    runner = lambda: CellRunner(plan.cells[0], plan.methods["l2"], data, ResultStore(tmp_path), torch.device("cpu"))
    with pytest.raises(BenchError, match="this script never trains"):
        drift.drift_rows(runner(), [1])
    runner().run_steps()  # trains and saves both steps
    [row] = drift.drift_rows(runner(), [1])
    assert row[1] == "0 -> 1" and row[2] == 6 * 10  # ext-class's new model trains on all 6 classes, 10 images each
    assert all(-1.0 <= value <= 1.0 + 1e-6 for value in row[3:7])
    with pytest.raises(BenchError, match="has updates 1 to 1"):
        drift.drift_rows(runner(), [2])


# What a benchmark script may import from the package: the public API (the package's documented names), a plugin's
# API (method, metrics, models, geometry, data, config, scenarios) and the surface for tooling scripts; no submodule of
# these.
PUBLIC_MODULES = {"benchbackcompat", "benchbackcompat.method", "benchbackcompat.metrics", "benchbackcompat.models",
                  "benchbackcompat.geometry", "benchbackcompat.data", "benchbackcompat.config",
                  "benchbackcompat.scenarios", "benchbackcompat.tooling"}


def private_imports(source: str) -> list[str]:
    """Every ``benchbackcompat`` import of ``source`` (at any depth: imports inside functions count) that is not
    public: a module outside PUBLIC_MODULES, or a name that its module does not export (its ``__all__``; without
    one, a name defined there, not underscored)."""
    import ast
    import importlib

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "benchbackcompat"
                      and alias.name not in PUBLIC_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] == "benchbackcompat":
            if node.module not in PUBLIC_MODULES:
                found.append(node.module)
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                exported = (alias.name in module.__all__ if hasattr(module, "__all__") else not alias.name.startswith("_")
                            and getattr(value, "__module__", node.module) == node.module)
                if value is None or not exported:
                    found.append(f"{node.module}.{alias.name}")
    return found


def test_the_import_check_finds_private_imports():
    source = ("import benchbackcompat.engine.cell\nfrom benchbackcompat import cli, run\n"
              "def f():\n    from benchbackcompat.execution.plan import make_plan\n"
              "from benchbackcompat.models import build_network, torch\nfrom benchbackcompat.config import BaseModel, TrainConfig\n"
              "from benchbackcompat.method import _private, StepContext\nimport torch.nn\n")
    assert sorted(private_imports(source)) == sorted([
        "benchbackcompat.engine.cell", "benchbackcompat.cli", "benchbackcompat.execution.plan",
        "benchbackcompat.models.torch", "benchbackcompat.config.BaseModel", "benchbackcompat.method._private"])


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda p: p.name)
def test_benchmark_scripts_import_only_public_modules(path):
    assert private_imports(path.read_text(encoding="utf-8")) == []


def test_plan_grid_takes_names_and_seeds_as_the_command_line_does():
    from benchbackcompat.errors import BenchError

    plan = plan_grid("quick", "ext-class,both", "all", "0-1", assignments=["train.epochs=1"])
    methods = plan.run.methods
    assert {"l2", "hoc", "independent"} <= set(methods) and methods == sorted(methods)  # every installed method
    assert plan.run.seeds == [0, 1] and len(plan.cells) == 2 * len(methods) * 2
    assert {cell.scenario.config.train.epochs for cell in plan.cells} == {1}
    assert [c.seed for c in plan_grid("quick", ["ext-class"], ["l2"], 3).cells] == [3]
    with pytest.raises(BenchError, match="seeds: .*'x' is not a seed"):
        plan_grid("quick", "ext-class", "l2", "x")


def test_index_scale_scores_recall_against_the_exact_top_k():
    import numpy as np

    pytest.importorskip("faiss", reason="index_scale.py needs faiss (pip install 'benchbackcompat[faiss]')")
    index_scale = script("index_scale")
    gallery = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [-1.0, 0.0]], dtype=np.float32)
    query = np.array([[1.0, 0.1], [-0.2, 1.0]], dtype=np.float32)
    # inner products: query 0 -> 1.0, 0.1, 0.77, -1.0; query 1 -> -0.2, 1.0, 0.56, 0.2
    assert index_scale.exact_top(gallery, query, 2).tolist() == [[0, 2], [1, 2]]
    assert index_scale.recall(np.array([[0, 1], [2, 1]]), np.array([[0, 2], [1, 2]])) == 75.0  # 1/2 and 2/2
