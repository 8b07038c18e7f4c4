"""The harness's building blocks for benchmark, tooling and study scripts (the scripts under ``benchmarks/`` and
``studies/``).

Scripts that time, price or inspect the harness need more than :func:`benchbackcompat.run`: the plan of a grid
without running it, a method by its name, the training loop and the feature extraction on models of their own,
the shared models of a cell, the saved step models of a finished cell. This module is that surface: its names
keep working when the engine, the execution layer or the store are reorganised (they are re-exported here from
wherever they live); the modules they come from are internal. The reference is docs/api.md, "For benchmark and
tooling scripts".
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from benchbackcompat.engine.cell import CellRunner
from benchbackcompat.engine.shared import PRETRAIN_SEED, SharedModel, is_standard, shared_models
from benchbackcompat.engine.device import autocast, resolve_device
from benchbackcompat.engine.evaluate import compatibility_matrices, extract_features
from benchbackcompat.engine.features import FeatureBank, ModelFeatures
from benchbackcompat.engine.precision import AutoPrecision, Measurement, Workload, measure
from benchbackcompat.engine.train import Acceleration, batches_per_epoch, make_optimizer, train_model
from benchbackcompat.config import validate_model
from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.errors import BenchError
from benchbackcompat.execution.plan import Plan, assign_fingerprints, plan_of
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.overrides import parse_override
from benchbackcompat.execution.request import RunRequest, parse_seeds
from benchbackcompat.method import Method
from benchbackcompat.scenarios.data import ScenarioData
from benchbackcompat.scenarios.steps import Step
from benchbackcompat.store import ResultStore
# For the study scripts (studies/): stored records read as the leaderboard reads them, and a cell's features.
from benchbackcompat.engine.backfill import backfill_curves, refresh_orders
from benchbackcompat.metrics.backfill import area_under_curve, class_balanced_order, own_class_similarity, refresh_counts
from benchbackcompat.metrics.sign_flip import sign_flip_p
# For benchmarks/index_scale.py: IVF lists filed by the query's criterion, and the Milvus client.
from benchbackcompat.metrics.index import build as build_index, consistent_lists
from benchbackcompat.metrics.milvus import Collection as MilvusCollection
from benchbackcompat.record import CellRecord, FinishedRecord
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.claims.premises import fine_tuning_gain
from benchbackcompat.report.merge import read_results
from benchbackcompat.report.upgrade import seed_interval
from benchbackcompat.results.status import cell_states
from benchbackcompat.store.columnar import is_packed
from benchbackcompat.store.packing import append, pack, unpack

__all__ = [
    "PRETRAIN_SEED", "Acceleration", "AutoPrecision", "CellRunner", "FeatureBank", "Measurement", "MilvusCollection",
    "ModelFeatures", "Plan", "ResultStore", "ScenarioData", "SharedModel", "Step", "Workload", "assign_fingerprints",
    "autocast", "batches_per_epoch", "build_index", "compatibility_matrices", "consistent_lists", "create_method",
    "extract_features", "is_standard", "make_optimizer", "measure", "plan_grid", "resolve_device", "shared_models",
    "train_model", "view_features",
]


def create_method(name: str, params: dict | None = None) -> Method:
    """The method ``name`` of the installed plugins (as ``--methods`` names it) with hyperparameters ``params``
    (its defaults where omitted); a bad name or value is a one-line :class:`~benchbackcompat.BenchError`."""
    return PluginHost().create_method(name, dict(params or {}))


def plan_grid(preset: str, scenarios: str | Sequence[str], methods: str | Sequence[str],
              seeds: str | int | Sequence[int] | None = None, *, assignments: Sequence[str] = (),
              data_root: str | Path | None = None) -> Plan:
    """The cells of a grid as ``benchbackcompat run --dry-run`` plans them (:func:`plan_of` its request), nothing
    loaded or trained.

    ``scenarios`` and ``methods`` are names (a list or one comma-separated string; ``all`` is every scenario of the
    preset, or every installed method); ``seeds`` a list, one seed or ``"0-2"`` / ``"0,1,2"`` (None: the preset's);
    ``assignments`` are ``--set KEY=VALUE`` options and ``data_root`` is ``--data-root``. The plan's ``cells`` are
    keyed once :func:`assign_fingerprints` has loaded their data."""
    fields = {"preset": preset, "scenarios": scenarios, "methods": methods, "seeds": seeds, "data_root": data_root,
              "overrides": dict(map(parse_override, assignments))}
    return plan_of(validate_model(RunRequest, {key: value for key, value in fields.items() if value is not None},
                                  "plan_grid"))


# --- for the study scripts (studies/): stored records and a cell's features --------------------------------------
__all__ += [
    "CellRecord", "FinishedRecord", "append", "area_under_curve", "build_tables", "cell_backfill_curves", "cell_features",
    "cell_states", "class_balanced_order", "fine_tuning_gain", "is_packed", "own_class_similarity", "pack",
    "parse_seeds", "read_records", "refresh_counts", "refresh_orders", "seed_interval", "sign_flip_p", "unpack",
]


def read_records(*folders: str | Path) -> list[CellRecord]:
    """Every record of the results ``folders`` (in priority order), merged as the leaderboard merges them; a folder
    without results is a one-line :class:`~benchbackcompat.BenchError`."""
    return read_results([Path(folder) for folder in folders]).records


def cell_features(runner: CellRunner) -> list[ModelFeatures]:
    """The evaluation features of each model of ``runner``'s cell, as its evaluation extracts them: the steps saved
    in the runner's store are loaded, the others trained (and saved)."""
    models, _, _ = runner.run_steps()
    return [runner.features(runner.method, model, index) for index, model in enumerate(models)]


def view_features(runner: CellRunner, models: Sequence[torch.nn.Module], count: int, seed: int = 0) -> list[Tensor]:
    """Features, from each of ``models`` (the cell's, :meth:`CellRunner.run_steps`), of ``count`` augmented views of
    the cell's query images (each a random image, flipped at random, shifted by up to 4 pixels and brightened or
    darkened by up to 20%), the same views for every model: a distractor gallery from a real model of the project."""
    gen = torch.Generator().manual_seed(seed)
    images = runner.data.query.images
    which = torch.randint(len(images), (count,), generator=gen)
    views = images[which].float()
    flip = torch.rand(count, generator=gen) < 0.5
    views[flip] = views[flip].flip(-1)
    shifts = torch.randint(-4, 5, (count, 2), generator=gen)
    for dy, dx in shifts.unique(dim=0).tolist():
        rows = (shifts[:, 0] == dy) & (shifts[:, 1] == dx)
        views[rows] = views[rows].roll((dy, dx), dims=(-2, -1))
    views *= 0.8 + 0.4 * torch.rand(count, 1, 1, 1, generator=gen)
    arrays = ImageArrays(views.clamp(0, 255).round().to(torch.uint8), runner.data.query.labels[which])
    mean, std = runner.data.query_stats
    step = runner.steps[-1]
    return [extract_features(model, runner.method, arrays, mean=mean, std=std,
                             batch_size=runner.scenario.train.eval_batch_size, device=runner.device,
                             amp=runner.amp(step.backbone, runner.scenario.train)) for model in models]


def cell_backfill_curves(runner: CellRunner, features: list[ModelFeatures]) -> dict:
    """The backfilling curves that ``runner``'s cell records (``{"pairs": [...]}``, its scenario's ``backfill``
    options) from the ``features`` of :func:`cell_features`; a scenario without ``backfill`` is a
    :class:`~benchbackcompat.BenchError`."""
    scenario = runner.scenario
    if scenario.backfill is None:
        raise BenchError(f"{runner.cell.label}: its scenario has no backfilling curves; set backfill "
                         "(e.g. assignments=['backfill={}'])")
    return backfill_curves(runner.method, FeatureBank.in_memory(features), runner.data, scenario.protocol,
                            scenario.metrics, runner.cell.seed, scenario.backfill, label=runner.cell.label)
