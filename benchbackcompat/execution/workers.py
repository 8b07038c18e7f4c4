"""Several cells at once on one machine: ``run --workers N``.

N spawned processes run the same request (with one worker each) on the same results directory, each
with 1/N of the CPU threads. The cell locks hand every cell to exactly one of them (a process skips a
cell that another holds and takes the next one), shared models are trained once under their own lock,
and every process returns the records of the whole plan.
"""
from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import torch

from benchbackcompat.engine.cell import worker_name
from benchbackcompat.record import CellRecord
from benchbackcompat.execution.request import RunRequest

Runner = Callable[[RunRequest], Any]  # benchbackcompat.execution.runner.run: returns an outcome with .records


def threads_per_worker(workers: int, threads: int | None = None) -> int:
    """The intra-op threads of each of ``workers`` processes sharing ``threads`` (default: this process's)."""
    return max(1, (threads or torch.get_num_threads()) // workers)


def execute_in_workers(request: RunRequest, cells: int, run: Runner) -> tuple[list[CellRecord], set[str]]:
    """``run`` the request in ``request.workers`` processes (at most one per cell of its ``cells``), each with one
    worker; returns every cell's record (a cell that failed in one process may have been retried by another) and
    the worker names (``host:pid``) of those processes."""
    count = min(request.workers, cells) or 1
    threads = threads_per_worker(count)
    alone = request.model_copy(update={"workers": 1})
    with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = [future.result() for future in [pool.submit(_work, alone, run, threads) for _ in range(count)]]
    merged: dict[str, CellRecord] = {}
    for records, _ in results:
        for record in records:
            if merged.setdefault(record.key, record).status == "failed":
                merged[record.key] = record
    return list(merged.values()), {name for _, name in results}


def _work(request: RunRequest, run: Runner, threads: int) -> tuple[list[CellRecord], str]:
    torch.set_num_threads(threads)
    return run(request).records, worker_name()
