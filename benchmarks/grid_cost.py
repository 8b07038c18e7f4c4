"""Estimated and measured time of a preset's whole grid (methods x scenarios x seeds) on this machine.

Estimate: every model the grid trains is counted once (the shared models, references and models
pretrained elsewhere are the runner's own list, ``benchbackcompat.tooling.shared_models``, with their keys, so each is
trained once for the whole grid),
its training images (batches per epoch x batch size x epochs) divided by the training throughput
of its backbone, plus one forward of the frozen reference per batch for a step that has one; the
evaluation counts one extraction pass per model (and per reference) over the query and gallery
sets. Throughputs are calibrated here, per backbone, with the harness's own training loop and
extraction (a few batches each).

Measured: ``--measure`` runs part of the grid for real (``benchbackcompat run`` in a fresh results
folder, one process) and prints its wall time beside the estimate of the same part, so the
estimate of the whole grid can be checked (and scaled by the measured/estimated ratio).

    python benchmarks/grid_cost.py --preset quick --scenario all --methods all --seeds 0,1,2 \
        [--measure-scenario both --measure-methods hoc,l2 --measure-seeds 0] [--workers 1,2] [--repeats 3]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tabulate import tabulate

from benchbackcompat import BenchError
from benchbackcompat.config import config_hash
from benchbackcompat.scenarios import MultiStep
from benchbackcompat.data import ImageArrays
from benchbackcompat.method import StandardMethod, StepContext
from benchbackcompat.tooling import (
    PRETRAIN_SEED,
    Acceleration,
    AutoPrecision,
    Plan,
    ScenarioData,
    Step,
    assign_fingerprints,
    batches_per_epoch,
    extract_features,
    is_standard,
    plan_grid,
    shared_models,
    train_model,
)
from benchbackcompat.tooling import Workload as TimedStep


Workload = tuple[str, int]  # (backbone, image size)


@dataclass
class Work:
    """Images to train and to extract, per (backbone, image size); ``with_reference`` counts training images
    of steps that also run a frozen reference model forward."""

    train: dict[Workload, int] = field(default_factory=lambda: defaultdict(int))
    with_reference: dict[Workload, int] = field(default_factory=lambda: defaultdict(int))
    extract: dict[Workload, int] = field(default_factory=lambda: defaultdict(int))
    models: int = 0
    zoo_models: int = 0  # already-trained models: no training, and not timed here (their weights are downloads)

    def seconds(self, rates: dict[Workload, tuple[float, float]]) -> float:
        total = 0.0
        for workload, images in self.train.items():
            total += images / rates[workload][0]
        for workload, images in self.with_reference.items():
            total += images / rates[workload][1]
        for workload, images in self.extract.items():
            total += images / rates[workload][1]
        return total


def trained_images(data: ScenarioData, scenario, step: Step, seed: int, memory: int) -> int:
    """Images one model trains on: its batches an epoch times the batch, times its epochs after ``train.min_steps``
    stretched them (as ``CellRunner.context`` does)."""
    cfg = scenario.train_config(step.index)
    n_new = len(data.step_data(step, seed))
    n_memory = memory if step.replay else 0
    batches = batches_per_epoch(n_new, n_memory, cfg.batch_size)
    return batches * min(cfg.batch_size, n_new + n_memory) * cfg.for_batches(batches).epochs


def grid_work(plan: Plan) -> dict[str, Work]:
    """Work per scenario name of the plan's cells, every shared model counted once over the whole plan, and a cell
    that trains alike an earlier one (one ``Cell.training_key``: it differs only in what it evaluates, e.g.
    multi-step-seen and multi-step) counted for its evaluation alone: it loads that cell's trained steps. The data
    is loaded, once per configuration, by ``assign_fingerprints`` (into ``plan.loaded``), which keys the cells."""
    data_of = assign_fingerprints(plan, torch.device("cpu"))
    seen: set[str] = set()
    work: dict[str, Work] = defaultdict(Work)

    def once(key: dict) -> bool:
        digest = config_hash(key)
        new = digest not in seen
        seen.add(digest)
        return new

    for cell in plan.cells:
        scenario, method = cell.scenario.config, plan.methods[cell.method]
        if method.unsupported_reason(scenario):
            continue
        data = data_of(cell.scenario.config)
        w = work[cell.scenario.name]
        steps = scenario.steps(data.num_classes)
        size = data.image_size
        eval_images = len(data.query) + (len(data.gallery) if data.gallery is not None else 0)
        trained = [step for step in steps if step.init != "zoo"]
        for step in trained * (2 if scenario.single_update else 1):  # single updates: the references too
            w.extract[step.backbone, size] += eval_images
        if not once({"trained alike": cell.training_key}):
            continue
        for shared in shared_models(method, steps, scenario, data, cell.seed):
            if not once({"shared": shared.key}):
                continue
            if shared.label.startswith("pretrained-"):
                pretrain = scenario.model_copy(update={"train": scenario.pretrain})
                w.train[shared.step.backbone, size] += trained_images(data, pretrain, shared.step, PRETRAIN_SEED, 0)
            else:  # trained alone: no old model, no memory
                w.train[shared.step.backbone, size] += trained_images(data, scenario, shared.step, cell.seed, 0)
            w.models += 1
        memory = 0
        for step in steps:
            if step.init == "zoo":
                w.zoo_models += 1
                continue
            if not is_standard(method, step):  # the method's own model, with the frozen previous one beside it
                images = trained_images(data, scenario, step, cell.seed, memory)
                w.train[step.backbone, size] += images
                if step.index > 0 or step.pretrained is not None:
                    w.with_reference[steps[step.index - 1].backbone if step.index else step.backbone, size] += images
                w.models += 1
            memory += getattr(scenario, "memory_per_class", 0) * (step.classes[1] - step.classes[0])
    return work


def calibrate(workloads: set[Workload], batch: int, batches: int, amp: str) -> dict[Workload, tuple[float, float]]:
    """(training images/s, forward images/s) per (backbone, image size) with the harness's loop, at the grid's
    precision (``train.amp``; ``auto`` resolved per backbone as a run resolves it, from the user cache's measurement)."""
    rates = {}
    for backbone, size in sorted(workloads):
        resolved = AutoPrecision().resolve(amp, torch.device("cpu"), TimedStep(backbone, size, batch, channels_last=True))
        scenario = MultiStep(num_models=2, model={"backbone": backbone, "embedding_dim": 64},
                             train={"epochs": 1, "batch_size": batch, "amp": resolved})
        steps = scenario.steps(10)
        gen = torch.Generator().manual_seed(0)
        images = ImageArrays(torch.randint(0, 256, (batch * batches, 3, size, size), dtype=torch.uint8, generator=gen),
                             torch.arange(batch * batches) % 10)
        method = StandardMethod()
        ctx = StepContext(scenario=scenario, step=steps[1], steps=steps, train=scenario.train_config(1),
                          device=torch.device("cpu"), old_model=None, train_data=images.subset(torch.arange(batch)),
                          memory=None, mean=(0.5,) * 3, std=(0.25,) * 3, image_size=size, seed=0)
        model = method.build_model(ctx, backbone, 10)
        acceleration = Acceleration.resolve("auto", False, ctx.device)  # channels-last, as `benchbackcompat run` trains by default
        with contextlib.redirect_stderr(io.StringIO()):
            train_model(model, method, ctx, seed=0, acceleration=acceleration)  # warm-up
            ctx.train_data = images
            started = time.perf_counter()
            train_model(model, method, ctx, seed=1, acceleration=acceleration)
            train_rate = batch * batches / (time.perf_counter() - started)
        kwargs = dict(mean=(0.5,) * 3, std=(0.25,) * 3, batch_size=512, device=torch.device("cpu"), amp=resolved)
        extract_features(model, method, images, **kwargs)
        started = time.perf_counter()
        extract_features(model, method, images, **kwargs)
        rates[backbone, size] = (train_rate, len(images) / (time.perf_counter() - started))
        print(f"  {backbone} {size}x{size}: train {train_rate:.0f} img/s, forward {rates[backbone, size][1]:.0f} img/s", file=sys.stderr)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--scenario", default="all")
    parser.add_argument("--methods", default="all")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--measure-scenario", help="scenarios of the part run for real (default: none run)")
    parser.add_argument("--measure-methods", help="methods of the measured part (default: --methods)")
    parser.add_argument("--measure-seeds", default="0")
    parser.add_argument("--workers", default="1", help="--workers of the measured run; several (1,2) are run interleaved")
    parser.add_argument("--calibration-batches", type=int, default=3)
    parser.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE",
                        help="as `run --set`, for the estimate and the measured part (e.g. train.epochs=1)")
    parser.add_argument("--repeats", type=int, default=1, help="measured runs (interleaved over --workers values)")
    parser.add_argument("--data-root", type=Path, help="as `run --data-root`: the folder holding the dataset files")
    args = parser.parse_args()
    try:
        estimate_and_measure(args)
    except BenchError as error:  # bad input (a missing dataset, an unknown method): one line, no traceback
        raise SystemExit(f"error: {error}") from None


def estimate_and_measure(args: argparse.Namespace) -> None:
    plan = plan_grid(args.preset, args.scenario, args.methods, args.seeds, assignments=args.assignments,
                     data_root=args.data_root)
    work = grid_work(plan)
    batch = max(s.config.train.batch_size for s in plan.run.scenarios)
    workloads = {workload for w in work.values() for workload in (*w.train, *w.extract)}
    print(f"{len(plan.cells)} cells ({args.preset}: {args.scenario} x {args.methods} x seeds {args.seeds}); "
          f"calibrating {len(workloads)} backbone x image size pairs, {torch.get_num_threads()} threads", flush=True)
    amps = {s.config.train.amp for s in plan.run.scenarios}
    amp = amps.pop() if len(amps) == 1 else "auto"  # a preset mixing precisions is priced at the default
    rates = calibrate(workloads, batch, args.calibration_batches, amp)
    rows = [[name, sum(c.scenario.name == name for c in plan.cells), w.models, sum(w.train.values()),
             f"{w.seconds(rates) / 60:.1f}"] for name, w in work.items()]
    total = sum(w.seconds(rates) for w in work.values())
    rows.append(["total", len(plan.cells), sum(w.models for w in work.values()),
                 sum(sum(w.train.values()) for w in work.values()), f"{total / 60:.1f}"])
    print(tabulate(rows, headers=["scenario", "cells", "models trained", "training images", "estimated min"],
                   tablefmt="github"))
    print(f"\nestimated whole grid: {total / 3600:.2f} h on this machine with one cell at a time")
    zoo = sum(w.zoo_models for w in work.values())
    if zoo:
        print(f"not counted: {zoo} already-trained model-zoo models (no training; their evaluation needs downloaded weights)")
    if not args.measure_scenario:
        return
    part = plan_grid(args.preset, args.measure_scenario, args.measure_methods or args.methods, args.measure_seeds,
                     assignments=args.assignments, data_root=args.data_root)
    part.loaded.update(plan.loaded)  # the measured part's data is the whole grid's, loaded already
    estimate = sum(w.seconds(rates) for w in grid_work(part).values())
    measured: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.repeats):
        for workers in args.workers.split(","):
            with tempfile.TemporaryDirectory(dir=Path.cwd()) as out:
                command = [sys.executable, "-m", "benchbackcompat", "run", "--preset", args.preset, "--scenario",
                           args.measure_scenario, "--methods", ",".join(part.run.methods), "--seeds", args.measure_seeds,
                           "--out", out, "--workers", workers, *(f"--set={a}" for a in args.assignments),
                           *(["--data-root", str(args.data_root)] if args.data_root else [])]
                started = time.perf_counter()
                subprocess.run(command, check=True, capture_output=True)
                measured[workers].append(time.perf_counter() - started)
            print(f"  measured --workers {workers}: {measured[workers][-1]:.0f} s", file=sys.stderr, flush=True)
    print(f"\nmeasured part: {len(part.cells)} cells ({args.measure_scenario} x {','.join(part.run.methods)} x seeds "
          f"{args.measure_seeds}), estimated {estimate:.0f} s with one cell at a time")
    rows = []
    for workers, seconds in measured.items():
        median = statistics.median(seconds)
        rows.append([workers, f"{torch.get_num_threads() // int(workers) or 1}", f"{median:.0f}",
                     " ".join(f"{s:.0f}" for s in seconds), f"{median / estimate:.2f}",
                     f"{len(part.cells) * 3600 / median:.1f}", f"{total * median / estimate / 3600:.2f}"])
    print(tabulate(rows, headers=["--workers", "threads each", "measured s (median)", "runs", "measured/estimated",
                                  "cells per hour", "whole grid scaled, h"], tablefmt="github"))


if __name__ == "__main__":
    main()
