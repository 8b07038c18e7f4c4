"""Several cells at once on one machine: ``run --workers N``.

N spawned processes execute the same plan on the same results directory, each with 1/N of the
CPU threads. The cell locks hand every cell to exactly one of them (a process skips a cell that
another holds and takes the next one), shared models are trained once under their own lock, and
every process returns the records of the whole plan.
"""
from __future__ import annotations

import argparse
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
import torch

from benchbackcompat.errors import BenchError
from benchbackcompat.plugin_host import PluginHost
from benchbackcompat.plan import Plan, execute
from benchbackcompat.record import CellRecord

PlanBuilder = Callable[[argparse.Namespace], tuple[Plan, PluginHost]]


def threads_per_worker(workers: int, threads: int | None = None) -> int:
    """The intra-op threads of each of ``workers`` processes sharing ``threads`` (default: this process's)."""
    return max(1, (threads or torch.get_num_threads()) // workers)


def execute_in_workers(args: argparse.Namespace, plan: Plan, workers: int, build: PlanBuilder) -> list[CellRecord]:
    """Run ``plan`` in ``workers`` processes (each rebuilds it with ``build(args)``); returns every cell's record."""
    if workers < 1:
        raise BenchError(f"--workers {workers}: expected a positive number of processes, e.g. --workers 2")
    count = min(workers, len(plan.cells)) or 1
    threads = threads_per_worker(count)
    with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_work, args, build, threads) for _ in range(count)]
        results = [future.result() for future in futures]
    # every process returns the whole plan's records; a cell that failed in one may have been retried by another
    return [next((r for r in column if r.status != "failed"), column[0]) for column in zip(*results)]


def _work(args: argparse.Namespace, build: PlanBuilder, threads: int) -> list[CellRecord]:
    torch.set_num_threads(threads)
    plan, host = build(args)
    return execute(plan, host)
