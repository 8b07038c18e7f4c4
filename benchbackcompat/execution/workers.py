"""Several cells at once on one machine: ``run --workers N``.

N spawned processes run the same request (with one worker each) on the same results directory, each
with 1/N of the CPU threads. The cell locks hand every cell to exactly one of them (a process skips a
cell that another holds and takes the next one), shared models are trained once under their own lock,
and every process returns the records of the whole plan.

The run watches its workers: each says which cell it starts and sends each record it makes. A worker
that dies (the out-of-memory killer's SIGKILL) costs only its cell: the run names the cell, the other
workers go on (one of them may take the cell up, after its saved steps) and the run ends non-zero. On
SIGINT or SIGTERM the run stops its workers before it exits, and a worker whose run is gone dies
(:mod:`benchbackcompat.runtime.orphans`). A cell that timed out in one worker is not retried by another.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import signal
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import torch

from benchbackcompat.cell import Cell
from benchbackcompat.store.provenance import worker_name
from benchbackcompat.errors import BenchError
from benchbackcompat.execution.plan import WorkerLink
from benchbackcompat.execution.request import RunRequest
from benchbackcompat.record import CellRecord
from benchbackcompat.runtime.interrupts import describe, stopping_on_sigterm
from benchbackcompat.runtime.logs import configure, log
from benchbackcompat.runtime.orphans import die_with_parent

Runner = Callable[[RunRequest, WorkerLink], Any]  # benchbackcompat.execution.runner.run: an outcome with .records
STOP_S = 10.0  # how long a worker stopped with SIGTERM may take to exit before it is killed


@dataclass
class WorkerResults:
    """What the workers of a run did: every cell's record, the worker names of the processes that computed them,
    and a line for each worker that died (naming its cell)."""

    records: list[CellRecord]
    workers: set[str]
    lost: list[str]


@dataclass
class _Worker:
    process: BaseProcess
    receive: Connection
    cell: tuple[str, str] | None = None  # key and label of the cell it computes
    done: bool = False

    @property
    def name(self) -> str:
        return worker_name(self.process.pid)


@dataclass
class _Results:
    records: dict[str, CellRecord] = field(default_factory=dict)
    workers: set[str] = field(default_factory=set)
    deaths: list[tuple[str, str, tuple[str, str] | None]] = field(default_factory=list)  # name, how, cell
    errors: list[BaseException] = field(default_factory=list)

    def add(self, record: CellRecord) -> None:
        """Keep ``record`` unless the cell already has one that did not fail (another process may have retried)."""
        if self.records.setdefault(record.key, record).status == "failed":
            self.records[record.key] = record


def threads_per_worker(workers: int, threads: int | None = None) -> int:
    """The intra-op threads of each of ``workers`` processes sharing ``threads`` (default: this process's)."""
    return max(1, (threads or torch.get_num_threads()) // workers)


def execute_in_workers(request: RunRequest, count: int, run: Runner) -> WorkerResults:
    """``run`` the request in ``count`` processes, each with one worker; returns every cell's record, the worker names of the processes that computed them and a line for each
    worker that died. On SIGINT or SIGTERM the workers are stopped before the interrupt goes on."""
    alone = request.model_copy(update={"workers": 1})
    context = multiprocessing.get_context("spawn")  # fresh interpreters: no CUDA context or locks inherited
    handler = next((h for h in log.handlers if isinstance(h, logging.FileHandler)), None)
    options = (threads_per_worker(count), os.getpid(), uuid.uuid4().hex, log.level, handler and handler.baseFilename)
    workers: list[_Worker] = []
    results = _Results()
    try:
        with stopping_on_sigterm():
            for _ in range(count):
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_work, args=(alone, run, send, *options), name="benchbackcompat worker")
                process.start()
                send.close()
                workers.append(_Worker(process, receive))
            while live := [w for w in workers if not w.done]:
                wait([w.receive for w in live] + [w.process.sentinel for w in live])
                for worker in live:
                    _hear(worker, results)
    finally:
        _stop(workers)
    if results.errors:
        raise results.errors[0]
    lost = [f"worker {name} {how} in cell {cell[1]}: " + ("another worker took it up" if cell[0] in
            results.records else "not recorded; run the same command again to resume it after its saved steps")
            if cell else f"worker {name} {how} between cells" for name, how, cell in results.deaths]
    return WorkerResults(list(results.records.values()), results.workers, lost)


def _hear(worker: _Worker, results: _Results) -> None:
    """Read what ``worker`` has sent; note its death when it ended without its results."""
    ended = not worker.process.is_alive()
    while not worker.done and worker.receive.poll():
        try:
            message = worker.receive.recv()
        except EOFError:
            ended = True
            break
        kind, *content = message
        if kind == "started":
            worker.cell = tuple(content)
        elif kind == "finished":
            results.add(content[0])
            results.workers.add(content[0].worker or worker.name)
            worker.cell = None
        elif kind == "done":
            for record in content[0]:
                results.add(record)
            results.workers |= content[1]
            worker.done = True
        else:
            results.errors.append(content[0])
            worker.done = True
    if ended and not worker.done:
        worker.process.join()
        worker.done = True
        how = _how(worker.process.exitcode)
        results.deaths.append((worker.name, how, worker.cell))
        where = f"while computing {worker.cell[1]}" if worker.cell else "between cells"
        log.warning(f"worker {worker.name} {how} {where}; the other workers go on")


def _how(exitcode: int | None) -> str:
    """How a worker ended, in words: ``was killed by SIGKILL (...)`` or ``exited (code 1) without its results``."""
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        return f"was killed by {name}" + (" (as the out-of-memory killer does)" if name == "SIGKILL" else "")
    return f"exited (code {exitcode}) without its results"


def _stop(workers: list[_Worker]) -> None:
    """Stop the workers still computing (SIGTERM: a kill is safe at any moment), then wait for every worker."""
    for worker in workers:
        if not worker.done and worker.process.is_alive():
            worker.process.terminate()
    for worker in workers:
        worker.process.join(STOP_S)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.receive.close()


def _work(request: RunRequest, run: Runner, send: Connection, threads: int, parent: int, token: str, level: int,
          log_file: str | None) -> None:
    """A worker process: its run of the request, telling the parent each cell it starts and each record."""
    die_with_parent(parent)
    configure(0, Path(log_file) if log_file else None, progress=False)
    log.setLevel(level)
    torch.set_num_threads(threads)

    def started(cell: Cell) -> None:
        send.send(("started", cell.key, cell.label))

    def finished(record: CellRecord) -> None:
        send.send(("finished", record))

    try:
        outcome = run(request, WorkerLink(token, started, finished))
        send.send(("done", outcome.records, outcome.workers))
    except BaseException as error:  # the parent raises it once every worker is done
        send.send(("error", _transferable(error)))
    finally:
        send.close()


def _transferable(error: BaseException) -> BaseException:
    """``error`` if it survives pickling, else a BenchError (user errors) or RuntimeError with its one-line description;
    the traceback of an unexpected error is printed here, where it happened."""
    if not isinstance(error, (BenchError, OSError, KeyboardInterrupt)):
        traceback.print_exc()
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return BenchError(str(error)) if isinstance(error, BenchError) else RuntimeError(describe(error))
