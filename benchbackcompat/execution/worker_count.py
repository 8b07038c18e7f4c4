"""How many cell processes ``run --workers auto`` starts: one per CPU thread when the run is worth it, else one.

Small networks train faster as one-thread processes side by side than as one process whose threads wait for each
other at every operator: the README's main command (2 cells, quick preset) took 75.3 s with two one-thread workers
against 86.7 s in one two-thread process on 2 Zen 4 cores, and 113 s against 127 s with the kernels held to AVX2
(``benchmarks/main_command.py``). Starting a worker costs about 5 s (a fresh interpreter imports torch and loads
the data again: a smoke run of 2 cells took 10.6 s in workers against 5.5 s in one process), so a run that trains
fewer than :data:`MIN_IMAGES` images stays in one process; so does a run on a GPU, one cell, or one that the
workers cannot run (``--executor``, torchrun, ``--force``, ``--rerun``).
"""
from __future__ import annotations

import torch

from benchbackcompat.cell import Cell
from benchbackcompat.engine import distributed
from benchbackcompat.engine.device import resolve_device
from benchbackcompat.execution.plan import Plan, assign_fingerprints, open_store
from benchbackcompat.execution.request import RunRequest
from benchbackcompat.method import batches_per_epoch
from benchbackcompat.runtime.logs import log
from benchbackcompat.scenarios.data import ScenarioData

# Training images (batches x batch size, every step of every pending cell) from which workers pay for their start.
# Measured on 2 Zen 4 cores: the main command's cells train 225,280 images in 87 s in one process, and workers save
# 13% of a run against ~5 s for their start, so they pay from 5 / 0.13 = 38 s of run, 38 / 87 x 225,280 = ~100,000
# images. Slower backbones or cores take longer per image and pay sooner: the floor errs towards one process.
MIN_IMAGES = 100_000


def worker_count(request: RunRequest, plan: Plan) -> int:
    """The number of cell processes for ``request``: its ``workers`` when a number, else (auto) one per CPU thread
    (at most one per pending cell) when the run trains on the CPU, at least 2 cells are pending and they train
    at least :data:`MIN_IMAGES` images; 1 otherwise. Auto loads the plan's data to key its cells (kept for a run
    in this process)."""
    if request.workers != "auto":
        return request.workers
    threads = torch.get_num_threads()
    if (request.executor != "inline" or distributed.active() or request.force or request.rerun or request.dry_run
            or threads < 2 or len(plan.cells) < 2):
        return 1
    device = resolve_device(plan.run.device)
    if device.type != "cpu":
        return 1
    data_of = assign_fingerprints(plan, device)
    store = open_store(plan.run.out, plan.run.lock_timeout)
    pending = [cell for cell in {cell.key: cell for cell in plan.cells}.values() if store.record(cell.key) is None]
    images = sum(training_images(cell, data_of(cell.scenario.config)) for cell in pending)
    count = min(threads, len(pending))
    if count < 2 or images < MIN_IMAGES:
        return 1
    log.info(f"workers auto: {count} cell processes of {threads // count} thread(s) each ({len(pending)} cells to "
             f"compute, {images:,} training images on {threads} CPU threads; --workers 1 runs them in this process)")
    return count


def training_images(cell: Cell, data: ScenarioData) -> int:
    """The images ``cell`` trains on, every step's batches times its batch size (replay memories and models shared
    with other cells left out): the run's size, in the unit its time grows with."""
    scenario = cell.scenario.config
    labels = data.train.labels
    total = 0
    for step in scenario.steps(data.num_classes):
        start, stop = step.classes
        count = int(((labels >= start) & (labels < stop)).sum())
        count = max(1, round(count * step.data_fraction)) if step.data_fraction < 1 else count
        train = scenario.train_config(step.index)
        per_epoch = batches_per_epoch(count, 0, train.batch_size)
        total += per_epoch * train.for_batches(per_epoch).epochs * min(train.batch_size, count)
    return total
