"""Runs cells: trains a method through a scenario's steps (resuming finished steps), evaluates, stores the record.

What a cell is and its key: ``benchbackcompat.cell``. Models that do not depend on the method (standard old models,
the references of P_com/P_up, models pretrained elsewhere) are trained once and shared through the store
(``engine.shared``). Trained models (saved steps, shared models) are keyed by what training reads: the configuration
without its evaluation-only fields and the fingerprint of the training images alone, so a larger test set evaluates
the models already trained.
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
import math
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import torch

from benchbackcompat.cell import Cell, cell_fields, unsupported
from benchbackcompat.scenarios.kinds import ScenarioBase
from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.engine import distributed
from benchbackcompat.engine.device import precision
from benchbackcompat.engine.precision import AutoPrecision, Workload
from benchbackcompat.engine.evaluate import (
    Evaluation,
    ModelFeatures,
    chance_level,
    evaluate_matrices,
    extract_features,
    model_features,
)
from benchbackcompat.engine.backfill import backfill_curves
from benchbackcompat.engine.features import FeatureBank
from benchbackcompat.engine.indexed import index_matrices
from benchbackcompat.engine.timing import PhaseTimer, Throughput
from benchbackcompat.evaluations import EVALUATION_OPTIONS, NAMES as EVALUATION_NAMES
from benchbackcompat.engine.shared import (PRETRAIN_SEED, SharedModel, is_standard, pretrained_elsewhere,
                                          reference_models, standard_model)
from benchbackcompat.engine.train import Acceleration, DivergedError, train_model
from benchbackcompat.runtime.logs import log
from benchbackcompat.runtime.faults import fault_point
from benchbackcompat.runtime.interrupts import describe, must_propagate
from benchbackcompat.method import Method, StepContext, batches_per_epoch, frozen_copy
from benchbackcompat.metrics import compatibility as cm
from benchbackcompat.metrics.summary import summarise
from benchbackcompat.models.network import Network
from benchbackcompat.models.zoo import create_zoo_model
from benchbackcompat.scenarios.data import ScenarioData, select_memory
from benchbackcompat.scenarios.steps import Step
from benchbackcompat.runtime.seeds import derive_seed, seed_everything
from benchbackcompat.store import ResultStore
from benchbackcompat.store.provenance import device_name, versions, worker_name
from benchbackcompat.record import CellRecord, parse_record


class CellRunner:
    """Trains and evaluates one cell."""

    def __init__(self, cell: Cell, method: Method, data: ScenarioData, store: ResultStore, device: torch.device,
                 observer=None, share_models: bool = True, acceleration: Acceleration = Acceleration(),
                 borrow_steps: bool = True, auto_precision: AutoPrecision | None = None) -> None:
        self.cell, self.method, self.data, self.store, self.device = cell, method, data, store, device
        self.auto_precision = auto_precision or AutoPrecision()
        self.precisions: dict[str, str] = {}  # backbone -> the precision it trained and was evaluated in
        if cell.data_fingerprint is None:  # a cell built outside a plan: keyed by the data it runs on
            cell.data_fingerprint, cell.training_fingerprint = data.fingerprint, data.training_fingerprint
            cell.data_source = data.source_fingerprint
        self.share_models, self.acceleration, self.borrow_steps = share_models, acceleration, borrow_steps
        self.scenario: ScenarioBase = cell.scenario.config
        self.steps: list[Step] = self.scenario.steps(data.num_classes)
        self.observer = observer
        self.shared: list[str] = []
        self.timer = PhaseTimer(device)
        self.shared_seconds: dict[str, float] = {}  # shared, pretrained and reference models: trained or loaded
        self.shared_trained: list[str] = []  # those of them trained by this cell
        self.embedded = Throughput()  # images embedded and seconds, per backbone: what a refresh repeats
        self.indexed = Throughput()  # gallery items indexed, queries searched and seconds, per index kind

    # --- contexts and shared models --------------------------------------------------------
    def context(self, step: Step, old_model: Network | None, memory: ImageArrays | None, train_cfg=None,
                train_data: ImageArrays | None = None) -> StepContext:
        train_cfg = train_cfg or self.scenario.train_config(step.index)
        train_data = train_data if train_data is not None else self.data.step_data(step, self.cell.seed)
        n_memory = len(memory) if (step.replay and memory is not None) else 0
        per_epoch = batches_per_epoch(len(train_data), n_memory, train_cfg.batch_size)
        stretched = train_cfg.for_batches(per_epoch)
        if stretched is not train_cfg:
            log.debug(f"  step {step.index}: {stretched.epochs} epochs of {per_epoch} batches "
                     f"(train.min_steps={train_cfg.min_steps})")
        stretched = stretched.model_copy(update={"amp": self.amp(step.backbone, stretched)})
        return StepContext(
            scenario=self.scenario, step=step, steps=self.steps, train=stretched, device=self.device,
            old_model=old_model, train_data=train_data, memory=memory, mean=self.data.mean, std=self.data.std,
            image_size=self.data.image_size, seed=self.cell.seed, embedder=self.embedder(stretched),
        )

    def amp(self, backbone: str, train_cfg) -> str:
        """The precision ``train_cfg.amp`` trains and evaluates ``backbone`` in: ``bf16`` or ``off`` as configured;
        ``auto``: bf16 autocast only where measured faster on this machine (``engine.precision``)."""
        workload = Workload(backbone, self.data.image_size, train_cfg.batch_size, self.data.train.images.shape[1],
                            self.acceleration.channels_last, getattr(self.scenario.model, "input_size", {}).get(backbone))
        amp = self.auto_precision.resolve(train_cfg.amp, self.device, workload)
        self.precisions[backbone] = precision(amp)
        return amp

    def precision_used(self) -> str:
        """For the record: ``bf16 autocast`` or ``fp32``, or per backbone where they differ."""
        used = set(self.precisions.values())
        if len(used) == 1:
            return used.pop()
        return ", ".join(f"{backbone}: {p}" for backbone, p in sorted(self.precisions.items()))

    def embedder(self, train_cfg) -> Callable[[torch.nn.Module, ImageArrays], torch.Tensor]:
        """``StepContext.embed``: plain embeddings (``model.embed``) in evaluation batches on the device."""
        return lambda model, arrays: extract_features(model, Method(), arrays, mean=self.data.mean, std=self.data.std,
                                                      batch_size=train_cfg.eval_batch_size, device=self.device,
                                                      amp=train_cfg.amp)

    def fresh_model(self, method: Method, ctx: StepContext, backbone: str, num_classes: int, init_index: int) -> Network:
        """A new model whose initial weights depend only on the seed and ``init_index``."""
        seed_everything(derive_seed(self.cell.seed, "init", init_index))
        return method.build_model(ctx, backbone, num_classes).to(self.device)

    def train(self, method: Method, model: Network, ctx: StepContext, tag: str) -> list[dict[str, float]]:
        seed = derive_seed(self.cell.seed, "train", tag)
        seed_everything(seed)
        step = ctx.step.index

        def observe(epoch: int, values: dict[str, float]) -> None:
            if self.observer is not None:
                self.observer(cell=self.cell.label, step=step, epoch=epoch, values=values)

        step_modules = [module.to(self.device) for module in method.before_step(model, ctx) or ()]
        history = train_model(model, method, ctx, seed=seed, observer=observe, desc=f"{self.cell.label} {tag}",
                              acceleration=self.acceleration, step_modules=step_modules)
        method.after_step(model, ctx)
        return history

    def shared_model(self, shared: SharedModel) -> Network:
        """A model that does not depend on the method under test (``standard_model``, ``reference_models``):
        trained once, then loaded from the store; its time is recorded under its label."""
        step, recipe = shared.step, shared.recipe
        ctx = self.context(step, None, None)
        model = self.fresh_model(recipe, ctx, step.backbone, step.seen_classes, init_index=step.index)
        return self.stored_or_trained(shared.key, model,
                                      lambda: self.train(recipe, model, ctx, tag=f"standard-{step.index}"), shared.label)

    @property
    def sharing(self) -> dict[str, Any]:
        """The cell's part of its shared models' keys (``shared_models``' keywords)."""
        return {"scenario": self.scenario, "data": self.data, "seed": self.cell.seed,
                "cell_key": None if self.share_models else self.cell.key}

    def stored_or_trained(self, key: str, model: Network, train: Callable[[], object], label: str) -> Network:
        """Shared model ``key``: loaded from the store, or trained by ``train()`` and stored; under the
        model's lock, so that concurrent processes train it once. The time (waiting included) is
        recorded under ``label``."""
        self.shared.append(key)
        path = self.store.model_path(key)
        started = time.perf_counter()
        with self.timer.phase("shared"), self.store.model_lock(key):  # another process training it: wait, then load
            saved = self.store.load(path, self.device)
            problem = None if saved is None else unfit(saved, model, {"key": key})
            if problem:
                self.store.set_aside(path, f"it is not shared model {label} ({problem})", "retraining it")
            if saved is not None and not problem:
                log.info(f"  shared {label}: loaded from {path}")
            else:
                train()
                self.store.save(path, {"model": model.state_dict(), "key": key})
                self.shared_trained.append(label)
                log.info(f"  shared {label}: trained in {time.perf_counter() - started:.1f} s, stored in {path}")
            self.shared_seconds[label] = self.shared_seconds.get(label, 0.0) + time.perf_counter() - started
        return model.eval()

    def pretrained_model(self, step: Step) -> Network:
        """A model "pretrained elsewhere": ``method.reference()`` (cross-entropy with the method's head, labels
        left to right) trained on the first classes of the pretraining pool. Like the papers' downloaded
        checkpoints it is one artefact for every method with that recipe and every seed: trained once under
        PRETRAIN_SEED, then loaded from the store."""
        spec = step.pretrained
        shared = pretrained_elsewhere(self.method, step, self.scenario, self.data)
        recipe, pretrain_step, cfg = shared.recipe, shared.step, self.scenario.pretrain
        ctx = dataclasses.replace(self.context(pretrain_step, None, None, cfg, self.data.pretrain_data(spec.num_classes)),
                                  seed=PRETRAIN_SEED)  # nothing of the cell's seed reaches the shared artefact
        seed_everything(derive_seed(PRETRAIN_SEED, "pretrained-init", spec.index))
        model = recipe.build_model(ctx, spec.backbone, spec.num_classes).to(self.device)

        def pretrain() -> None:
            seed = derive_seed(PRETRAIN_SEED, "pretrained-train", spec.index)
            seed_everything(seed)
            train_model(model, recipe, ctx, seed=seed, desc=f"{self.cell.label} pretrained-{spec.index}")

        return self.stored_or_trained(shared.key, model, pretrain, shared.label)

    # --- the steps -------------------------------------------------------------------------
    def run_steps(self) -> tuple[list[Network], dict[int, list[dict[str, float]]], list[float]]:
        models: list[Network] = []
        curves: dict[int, list[dict[str, float]]] = {}
        timings: list[float] = []
        memory_index = torch.zeros(0, dtype=torch.long)
        saved = 0  # steps loaded from the checkpoints of an earlier run
        for step in self.steps:
            started, shared_before = time.perf_counter(), self.timer.get("shared")
            if step.init == "zoo":  # already trained elsewhere: rebuilt from its weights, never checkpointed
                models.append(self.zoo_model(step))
                curves[step.index] = []
                timings.append(time.perf_counter() - started)
                continue
            memory = self.data.train.subset(memory_index.to(self.device)) if len(memory_index) else None
            ctx = self.context(step, frozen_copy(models[-1]) if models else None, memory)
            resumed = self.saved_step(step, ctx)
            if resumed is not None:  # finished in an earlier run: resume after it
                model, checkpoint = resumed
                self.method.state = dict(checkpoint["method_state"])
                memory_index = checkpoint["memory"].cpu()
                curves[step.index] = checkpoint["curve"]
                self.shared.extend(checkpoint.get("shared", []))
                models.append(model.eval())
                timings.append(float(checkpoint["seconds"]))
                saved += 1
                continue
            if saved:
                log.info(f"resuming {self.cell.label} at step {step.index} of {len(self.steps)} "
                         f"({saved} finished steps loaded from {self.store.cell_dir(self.cell.key)})")
                saved = 0
            if is_standard(self.method, step):
                model, history = self.shared_model(standard_model(self.method, step, **self.sharing)), []
            else:
                model = self.fresh_model(self.method, ctx, step.backbone, step.seen_classes,
                                         0 if step.init == "same-as-first" else step.index)
                source = models[-1] if step.init == "previous" and models else None
                if step.init == "pretrained":
                    source = self.pretrained_model(step)
                    ctx.align_to = frozen_copy(source)
                self.method.initialise(model, source, ctx)
                history = self.train(self.method, model, ctx, tag=f"step-{step.index}")
            if step.replay or self.scenario.replay_per_class() > 0:
                per_class = self.scenario.replay_per_class()
                chosen = select_memory(self.data.train.labels, step.classes, per_class, derive_seed(self.cell.seed, "memory", step.index))
                memory_index = torch.cat([memory_index, chosen])
            seconds = time.perf_counter() - started - (self.timer.get("shared") - shared_before)  # its own training
            self.store.save(self.store.step_path(self.cell.key, step.index), {
                "model": model.state_dict(), "method_state": self.method.state, "memory": memory_index,
                "curve": history, "seconds": seconds, "shared": list(self.shared),
                "step": step.index, "training_key": self.cell.training_key,
            })
            curves[step.index] = history
            timings.append(seconds)
            models.append(model.eval())
            log.info(f"  {self.cell.label} step {step.index} of {len(self.steps)}: {step_summary(history)}, {seconds:.1f} s")
        if saved:
            log.info(f"resuming {self.cell.label}: all {len(self.steps)} steps were saved by an earlier run; evaluating")
        return models, curves, timings

    @functools.cached_property
    def alike(self) -> list[str]:
        """The keys of the cells whose saved steps this cell may load (none without ``borrow_steps``)."""
        return self.store.trained_alike(self.cell.training_key, but=self.cell.key) if self.borrow_steps else []

    def saved_step(self, step: Step, ctx: StepContext) -> tuple[Network, dict[str, Any]] | None:
        """Step ``step`` as an earlier run saved it, loaded into a fresh model: this cell's checkpoint, else one that a
        cell training alike (same training key, e.g. multi-step for multi-step-seen) saved, with no training seconds
        of this cell's own; None where there is none. A checkpoint that does not fit the step (another step's, another
        configuration's, other shapes) is set aside like a corrupt one, so that the step is recomputed."""
        def sources() -> Iterator[str]:
            yield self.cell.key
            yield from self.alike  # looked up only when this cell has no usable checkpoint of its own

        for key in sources():
            path = self.store.step_path(key, step.index)
            checkpoint = self.store.load(path, self.device)
            if checkpoint is None:
                continue
            model = self.fresh_model(self.method, ctx, step.backbone, step.seen_classes, step.index)
            problem = unfit(checkpoint, model, {"step": step.index, "training_key": self.cell.training_key},
                            STEP_CHECKPOINT)
            if problem:
                self.store.set_aside(path, f"it does not fit step {step.index} of {self.cell.label} ({problem})",
                                     "recomputing the step")
                continue
            if key != self.cell.key:
                log.info(f"  {self.cell.label} step {step.index}: trained by "
                         f"{(self.store.cell_entry(key) or {}).get('label', key)}, loaded")
                checkpoint = {**checkpoint, "seconds": 0.0}
            return model, checkpoint
        return None

    def zoo_model(self, step: Step) -> Network:
        """An already-trained model: its encoder (features) and its own classifier (logits, for PSP/LSP);
        without weights (pretrained = false) a seeded random initialisation."""
        weights = self.scenario.weights.get(step.backbone)
        seed_everything(derive_seed(self.cell.seed, "init", step.index))
        model = create_zoo_model(step.backbone, num_classes=self.scenario.classes, image_size=self.data.image_size,
                                 in_chans=self.data.query.images.shape[1], data_stats=(self.data.mean, self.data.std),
                                 pretrained=str(weights) if weights else self.scenario.pretrained)
        return model.to(self.device).eval()

    # --- evaluation ------------------------------------------------------------------------
    def features(self, method: Method, model: Network, index: int = 0) -> ModelFeatures:
        """Features of ``model`` (step ``index``); NaN or Inf in them records the cell as diverged."""
        with self.timer.phase("extract"):
            backbone = self.steps[min(index, len(self.steps) - 1)].backbone
            amp = self.amp(backbone, self.scenario.train)
            started = self.timer.now()
            features = model_features(model, method, self.data, batch_size=self.scenario.train.eval_batch_size,
                                      device=self.device, amp=amp)
            self.embedded.add(backbone, sum(len(f) for f in (features.query, features.gallery) if f is not None),
                              self.timer.now() - started)
        if not all(bool(torch.isfinite(f).all()) for f in (features.query, features.gallery) if f is not None):
            raise DivergedError(index, None, None, None, what=f"evaluation features of model {index}")
        return features

    def evaluate(self, method: Method, features: list[ModelFeatures] | FeatureBank) -> Evaluation:
        with self.timer.phase("score"):
            return evaluate_matrices(method, features, self.data, self.scenario.protocol, self.scenario.metrics,
                                     self.cell.seed, self.scenario.verification_pairs,
                                     self.scenario.gallery_classes(self.steps))

    def run(self) -> dict[str, Any]:
        started = time.perf_counter()
        models, curves, step_seconds = self.run_steps()
        if not distributed.is_main():  # rank 0 evaluates and writes; the others help train the references
            if self.scenario.single_update:
                self.reference_model()
            return {"status": "finished"}
        reference = self.reference_model() if self.scenario.single_update else None  # training, timed as such
        features = FeatureBank(self.store.cell_dir(self.cell.key) / "features", device=self.device)  # spilled past 1 GiB
        try:
            for t, model in enumerate(models):
                features.append(self.features(self.method, model, t))
            evaluation = self.evaluate(self.method, features)
            upgrade = self.upgrade_evaluations(features)
        finally:
            features.close()
        metrics = {m: summarise(C) for m, C in evaluation.matrices.items()}
        outcomes: dict[str, dict[str, Any]] = {m: {"C": entries} for m, entries in evaluation.outcomes.items()}
        gains = {}
        if reference is not None:
            self.add_update_metrics(metrics, outcomes, *reference)
        elif self.scenario.reports_update_gain():
            gains = {"update_gain": self.update_gains(evaluation.matrices)}
        return {
            "status": "finished",
            "steps": [s.to_dict() for s in self.steps],
            "metrics": metrics,
            "matrices": evaluation.matrices,
            "outcomes": outcomes,
            "chance": {m: chance_level(m, self.scenario.protocol, self.data, self.first_classes) for m in self.scenario.metrics},
            **gains,
            "notes": evaluation.notes,
            "curves": {str(k): v for k, v in curves.items()},
            "shared_models": sorted(set(self.shared)),
            **upgrade,
            "timings": self.phase_timings(step_seconds, time.perf_counter() - started),
        }

    def upgrade_evaluations(self, features: FeatureBank) -> dict[str, Any]:
        """The evaluation options that are set (``evaluations.EVALUATION_OPTIONS``: backfilling curves, retrieval
        through an index), each computed in its timing phase (nothing when none is, so the record is what it was
        without them)."""
        found = {}
        for option in EVALUATION_OPTIONS:
            settings = getattr(self.scenario, option.name)
            if settings is not None:
                with self.timer.phase(option.name):
                    found[option.name] = COMPUTE_OPTION[option.name](self, features, settings)
        return found

    @property
    def first_classes(self) -> int | None:
        """The classes chance is computed on when entries are scored on their gallery model's classes: the first
        model's, the fewest, so the highest chance (None: every class)."""
        classes = self.scenario.gallery_classes(self.steps)
        return None if classes is None else classes[0]

    def phase_timings(self, step_seconds: list[float], total: float) -> dict[str, Any]:
        """Seconds per phase: each step's own training (resumed steps: as recorded when trained), the shared,
        pretrained and reference models (trained here or loaded; ``shared_trained`` names the trained ones),
        feature extraction of every model (the references' included) and scoring of the matrices; ``embed``: per
        backbone, the images its models embedded (query and gallery sets), the seconds of those forward passes and the
        precision; ``reindex``: per index kind, the gallery items indexed (summed over the entries), the queries searched
        and the seconds of both (where the index option runs). A refresh of the gallery repeats both: ``report.refresh``."""
        extract, score = self.timer.get("extract"), self.timer.get("score")
        return {
            "steps_s": step_seconds, "shared_s": dict(self.shared_seconds), "shared_trained": list(self.shared_trained),
            "train_s": sum(step_seconds) + sum(self.shared_seconds.values()),
            "extract_s": extract, "score_s": score, "eval_s": extract + score, "total_s": total,
            **{f"{name}_s": self.timer.get(name) for name in EVALUATION_NAMES if name in self.timer.seconds},
            "embed": {backbone: {**found, "precision": self.precisions.get(backbone, "")}
                      for backbone, found in self.embedded.to_dict().items()},
            **({"reindex": self.indexed.to_dict()} if self.indexed.counts else {}),
        }

    def reference_model(self) -> tuple[Method, Network]:
        """The recipe of the references and its independently trained new model (shared)."""
        [reference] = reference_models(self.method, self.steps, **self.sharing)
        return reference.recipe, self.shared_model(reference)

    def add_update_metrics(self, metrics: dict[str, dict[str, float]], outcomes: dict[str, dict[str, Any]],
                           recipe: Method, reference: Network) -> None:
        """P_com and P_up (HBCT Eqs. 14-15). phi_o is the cross-test's gallery model, the method's own old
        model C[0][0] (HBCT Eq. 14; P_com is normalised with old and reference models of the method's own geometry): numerator and denominator use its self-test
        ``old_self``; phi_* is the new model trained independently with the recipe of the old one (its
        self-test's per-query outcomes go to ``outcomes[metric]["reference_self"]``)."""
        evaluation = self.evaluate(recipe, [self.features(recipe, reference, 1)])
        for metric, C in evaluation.matrices.items():
            values = metrics[metric]
            values["reference_self"] = C[0][0]
            outcomes[metric]["reference_self"] = evaluation.outcomes[metric][0][0]
            values["p_com"] = cm.p_com(values["cross"], values["old_self"], values["reference_self"])
            values["p_up"] = cm.p_up(values["self"], values["reference_self"])
            # CoReS Eq. 3 with the independently trained new model as the upper bound: P_com under CoReS's name
            values["update_gain"] = cm.update_gain(values["cross"], values["old_self"], values["reference_self"])

    def update_gains(self, matrices: dict[str, list[list[float]]]) -> dict[str, list[list[float]]]:
        """The update gain of every pair k < t (CoReS Eq. 3, Tables 5, 6, 12): G[t][k] = (C[t][k] - C[k][k]) /
        (U[t] - C[k][k]), U[t] the self-test of step t's upper bound, the model trained alone on step t's data
        with the recipe of the method's first model (shared); NaN on and above the diagonal."""
        uppers = []
        for shared in reference_models(self.method, self.steps, **self.sharing):
            upper = self.shared_model(shared)
            uppers.append(self.evaluate(shared.recipe, [self.features(shared.recipe, upper, shared.step.index)]).matrices)
        gains = {}
        for metric, C in matrices.items():
            T = len(C)
            G = [[math.nan] * T for _ in range(T)]
            for t in range(1, T):
                for k in range(t):
                    G[t][k] = cm.update_gain(C[t][k], C[k][k], uppers[t - 1][metric][0][0])
            gains[metric] = G
        return gains


# How each evaluation option is computed from a cell's features: (runner, features, the option's settings) -> payload
COMPUTE_OPTION: dict[str, Callable[[CellRunner, FeatureBank, Any], dict[str, Any]]] = {
    "backfill": lambda runner, features, settings: backfill_curves(
        runner.method, features, runner.data, runner.scenario.protocol, runner.scenario.metrics, runner.cell.seed,
        settings, label=runner.cell.label),
    "index": lambda runner, features, settings: index_matrices(
        runner.method, features, runner.data, runner.scenario.protocol, runner.scenario.metrics, settings,
        label=runner.cell.label, timing=runner.indexed),
}


STEP_CHECKPOINT = {"method_state": dict, "memory": torch.Tensor, "curve": list, "seconds": (int, float)}


def unfit(checkpoint: dict[str, Any], model: Network, identity: dict[str, Any],
          fields: dict[str, type | tuple[type, ...]] | None = None) -> str | None:
    """Why ``checkpoint`` cannot be the saved state of ``model`` (loaded into it when it can; None then): a field it
    lacks, an ``identity`` field it records with another value (checkpoints written before these were recorded
    have none), or weights of other names or shapes (checked before loading, so that ``model`` is left as it was)."""
    for name, kind in {"model": dict, **(fields or {})}.items():
        if not isinstance(checkpoint.get(name), kind):
            return f"it has no {name}"
    for name, expected in identity.items():
        if name in checkpoint and checkpoint[name] != expected:
            return f"it holds {name} {checkpoint[name]!r}, not {expected!r}"
    own, saved = model.state_dict(), checkpoint["model"]
    problems = [f"it lacks {name}" for name in own if name not in saved]
    problems += [f"{name} is not in the model" for name in saved if name not in own]
    problems += [f"{name} has shape {list(getattr(saved[name], 'shape', []))}, the model's {list(own[name].shape)}"
                 for name in own if name in saved and isinstance(own[name], torch.Tensor)
                 and getattr(saved[name], "shape", None) != own[name].shape]
    if problems:
        return problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
    model.load_state_dict(saved)
    return None


def step_summary(history: list[dict[str, float]]) -> str:
    """``2 epochs, loss 3.1 -> 2.7, lr 0.05 -> 0.0012`` (per-epoch means), or where a shared model came from."""
    if not history:
        return "the shared standard model"
    first, last = history[0], history[-1]
    return (f"{len(history)} epoch{'s' if len(history) != 1 else ''}, loss {first.get('loss', math.nan):.4g} -> {last.get('loss', math.nan):.4g}, "
            f"lr {first.get('lr', math.nan):.4g} -> {last.get('lr', math.nan):.4g}")


def save_traceback(store: ResultStore, key: str) -> str | None:
    """Write the current exception's traceback into the cell's folder; its path, or None if it cannot be written."""
    try:
        return str(store.write_traceback(key, traceback.format_exc()))
    except OSError as error:
        log.warning(f"cannot write {error.filename} ({error.strerror or error}); the traceback is lost")
        return None


def run_cell(cell: Cell, method: Method, data: ScenarioData, store: ResultStore, device: torch.device,
             observer=None, plugin_versions: dict[str, str] | None = None, share_models: bool = True,
             acceleration: Acceleration = Acceleration(), borrow_steps: bool = True,
             auto_precision: AutoPrecision | None = None) -> CellRecord:
    """Run a cell and write its record (also for diverged and not-applicable cells; a failed cell's record is
    returned, not stored, so that a re-run retries it). ``borrow_steps``: load the steps that a cell training alike
    has saved (see ``Cell.training_key``)."""
    base = {**cell_fields(cell), "params": method.params.model_dump(mode="json"), "dataset": data.name,
            "versions": versions(plugin_versions or {}), "worker": worker_name()}
    reason = unsupported(method, cell.scenario.config)
    runner = None
    if reason:
        outcome: dict[str, Any] = {"status": "not-applicable", "reason": reason}
    else:
        try:
            fault_point(f"cell:{cell.label}")
            runner = CellRunner(cell, method, data, store, device, observer, share_models, acceleration, borrow_steps,
                                auto_precision)
            outcome = runner.run()
        except DivergedError as error:  # recorded (the leaderboard shows "nan"), not retried
            outcome = {"status": "diverged", "reason": str(error), "step": error.step, "epoch": error.epoch,
                       "batch": error.batch, "last_finite_loss": error.last_finite}
        except BaseException as error:  # plugin code (even sys.exit or its own KeyboardInterrupt) fails only its cell;
            if must_propagate(error):  # not recorded, so a re-run retries it. A real Ctrl-C stops the run.
                raise
            return parse_record({**base, "device": _device_text(device, cell, runner), "status": "failed",
                                 "reason": describe(error),
                                 "traceback": save_traceback(store, cell.key)})
    record = parse_record({**base, "device": _device_text(device, cell, runner), **outcome,
                           "computed_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")})
    store.write_record(cell.key, record)
    return record


def _device_text(device: torch.device, cell: Cell, runner: CellRunner | None) -> str:
    """``cpu (2 threads, ...); bf16 autocast``: the device and the precision the cell trained in (as configured where
    it trained nothing)."""
    used = runner.precision_used() if runner is not None and runner.precisions else precision(cell.scenario.config.train.amp)
    return f"{device_name(device)}; {used}"
