"""The one way to run a benchmark: :func:`run` takes a :class:`~benchbackcompat.execution.request.RunRequest`.

The command line, the Python API, the ``--workers`` processes and the executors' jobs all call it;
a worker or a job calls it again with its own part of the request (one worker, one shard).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

from benchbackcompat.engine import distributed
from benchbackcompat.store.provenance import worker_name
from benchbackcompat.errors import BenchError
from benchbackcompat.execution.executors import submit
from benchbackcompat.runtime.logs import log
from benchbackcompat.execution.plan import Plan, WorkerLink, execute, plan_of, run_summary, selected_cells
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.record import CellRecord
from benchbackcompat.execution.request import RunRequest
from benchbackcompat.execution.worker_count import worker_count
from benchbackcompat.execution.workers import execute_in_workers


@dataclass
class RunOutcome:
    """What a run did: its plan, the records of its cells (none for a dry run and on the other ranks of a
    data-parallel run), its exit code (1 when a cell failed or diverged, or a worker died), the summary line(s)
    and the worker names of the processes that computed its cells."""

    plan: Plan
    records: list[CellRecord] = field(default_factory=list)
    code: int = 0
    summary: str = ""
    workers: set[str] = field(default_factory=set)


def run(request: RunRequest, link: WorkerLink | None = None) -> RunOutcome:
    """Plan ``request``'s cells (its configuration: defaults < preset < (smoke) < the request's values) and compute
    the unfinished ones (inline, in ``workers`` processes or as executor jobs), then the selected settings of its
    grids; a dry run stops after planning. ``link``: this process is a worker of a larger run."""
    distributed.initialise_from_environment(request.device)  # under torchrun: one rank of a data-parallel cell
    if request.workers not in (1, "auto") and (request.executor != "inline" or distributed.active() or request.force or request.rerun):
        raise BenchError("--workers runs cells in processes on this machine: use it without --executor, torchrun, "
                         "--force and --rerun")
    if request.cell_timeout is not None and distributed.active():
        raise BenchError("--cell-timeout runs each cell in a child process: use it without torchrun")
    if not distributed.is_main():
        log.setLevel(max(log.level, logging.WARNING))  # one rank reports the cells
    host = PluginHost()
    plan = plan_of(request, host)
    if request.dry_run:
        return RunOutcome(plan)
    started = time.perf_counter()
    workers, lost = {worker_name()}, []
    if (count := min(worker_count(request, plan), len(plan.cells))) > 1:
        plan.loaded.clear()  # the workers load their own data
        results = execute_in_workers(request, count, run)
        records, lost = results.records, results.lost
        workers |= results.workers
    elif request.executor != "inline":
        records = submit(plan, request, run)
    else:
        records = execute(plan, host, link=link)
    # grids: the selected settings on the full protocol, as soon as their selection is recorded (not sharded: with
    # shards or jobs, the processes that find a selection complete run its cells, each cell once under its lock)
    finals, waiting = selected_cells(plan)
    if finals and request.executor != "inline":
        records += submit(replace(plan, cells=finals), request, run)
    elif finals:
        records += execute(plan, host, finals, link)
    if not distributed.is_main():
        return RunOutcome(plan)
    for line in waiting:
        log.info(f"grid {line}")
    records = list({record.key: record for record in records}.values())  # workers also return the grids' cells
    workers |= plan.computed_by
    summary, code = run_summary(records, time.perf_counter() - started, plan.run.out, workers)
    if lost:  # a worker died: its cell is named, and the run does not end as if nothing happened
        summary, code = "\n".join([summary, *lost]), max(code, 1)
    return RunOutcome(plan, records, code, summary, workers)
