"""One cell's computation, in this process or in a child process with a time limit (``--cell-timeout``).

A cell whose plugin code hangs (a loss that never returns, a deadlocked data loader, a CUDA kernel
that never finishes) would stall the run forever. With a time limit the cell runs in a spawned child
process; when the time is up the child is killed, the cell is recorded as failed (timed out after N s,
in which step) and the run goes on with the next cell. A child process rather than a signal-based
alarm in the main thread, because an alarm only interrupts Python code between bytecodes: a step
stuck inside a C extension, a CUDA synchronisation or a lock never returns to the interpreter, and
plugin code may catch the exception. Killing the process always works, and the kernel frees its CUDA
context and releases its file locks (steps already saved stay; a re-run resumes after them). The
price is a process start per cell (importing torch, loading the scenario's cached data), seconds.
"""
from __future__ import annotations

import functools
import logging
import multiprocessing
import os
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

import torch

from benchbackcompat.execution.request import RunConfig
from benchbackcompat.cell import Cell, cell_fields
from benchbackcompat.engine.cell import run_cell
from benchbackcompat.store.provenance import worker_name
from benchbackcompat.engine.device import resolve_device
from benchbackcompat.engine.precision import AutoPrecision
from benchbackcompat.engine.train import Acceleration
from benchbackcompat.runtime.logs import configure, log
from benchbackcompat.runtime.orphans import die_with_parent
from benchbackcompat.method import Method
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.record import CellRecord, FailedRecord, FinishedRecord, parse_record
from benchbackcompat.scenarios.data import ScenarioData, load_scenario_data
from benchbackcompat.store import ResultStore

TIMED_OUT = "timed out after"  # how the reason of a cell stopped by its time limit begins


@dataclass
class CellJob:
    """Everything one cell's computation needs (picklable: a child process receives it)."""

    cell: Cell
    method: type[Method]
    run: RunConfig
    plugin_versions: dict[str, str] = field(default_factory=dict)
    borrow_steps: bool = True  # load the steps a cell training alike saved (not for --force/--rerun)

    def compute(self, data: ScenarioData, store: ResultStore, device: torch.device, host: PluginHost) -> CellRecord:
        """Train and evaluate the cell with a fresh method object (its own, or its grid point's, hyperparameters)."""
        from benchbackcompat.engine import distributed

        method = self.method(self.method.Params.model_validate(self.cell.params))
        record = run_cell(self.cell, method, data, store, device,
                          observer=functools.partial(host.notify, "bbc_on_log") if distributed.is_main() else None,
                          plugin_versions=self.plugin_versions, share_models=self.run.share_models,
                          acceleration=Acceleration.resolve(self.run.channels_last, self.run.compile, device),
                          borrow_steps=self.run.share_models and self.borrow_steps,
                          auto_precision=AutoPrecision(self.run.cache_dir / "precision.json"))
        if isinstance(record, FinishedRecord):
            host.notify("bbc_on_cell_finished", record=record.to_json())
        return record


def run_watched(job: CellJob, timeout: float, store: ResultStore, steps: int) -> CellRecord:
    """``job`` in a spawned child process given ``timeout`` seconds (its start included); a cell that runs out of
    time, or whose process dies, is returned as failed (not stored: a re-run retries it, after its saved steps).
    The child dies with this process, and an interrupt here (Ctrl-C, a stopping worker) kills it first."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no CUDA context or locks inherited
    receive, send = context.Pipe(duplex=False)
    handler = next((h for h in log.handlers if isinstance(h, logging.FileHandler)), None)
    child = context.Process(target=_child, args=(job, send, log.level, handler and handler.baseFilename,
                                                 torch.get_num_threads(), os.getpid()), name=f"cell {job.cell.label}")
    child.start()
    send.close()
    record = None
    try:
        if receive.poll(timeout):
            try:
                record = receive.recv()
            except EOFError:  # the child died without an answer
                pass
        stopped = record is None and child.is_alive()
        if stopped:
            child.kill()
        child.join()
    finally:  # also on an interrupt while waiting: the child goes first
        if child.is_alive():
            child.kill()
            child.join()
        receive.close()
    if record is not None:
        return record
    where = _where(store, job.cell.key, steps)
    reason = (f"{TIMED_OUT} {timeout:g} s in {where} (--cell-timeout)" if stopped
              else f"its process died (exit code {child.exitcode}) in {where}")
    log.warning(f"cell {job.cell.label}: {reason}")
    return parse_record({**cell_fields(job.cell), "dataset": job.cell.scenario.config.data.name, "status": "failed",
                         "reason": reason, "worker": worker_name(child.pid)})


def timed_out(record: CellRecord) -> bool:
    """Whether ``record`` is that of a cell :func:`run_watched` stopped when its time was up."""
    return isinstance(record, FailedRecord) and record.reason.startswith(TIMED_OUT)


def _where(store: ResultStore, key: str, steps: int) -> str:
    """The step a cell was in, from the steps it saved: ``step 2 of 3`` or ``the evaluation``."""
    saved = sum(1 for path in store.cell_dir(key).glob("step-*.pt") if path.stem.split("-")[1].isdigit())
    return "the evaluation" if saved >= steps else f"step {saved} of {steps} (steps counted from 0)"


def _child(job: CellJob, send: Connection, level: int, log_file: str | None, threads: int, parent: int) -> None:
    from pathlib import Path

    die_with_parent(parent)
    configure(0, Path(log_file) if log_file else None, progress=False)
    log.setLevel(level)
    torch.set_num_threads(threads)
    host = PluginHost()
    host.load(job.cell.method)  # its datasets and backbones, and the observers, as in the parent
    host.register_extensions()
    host.load_observers(job.run.out)
    device = resolve_device(job.run.device)
    data = load_scenario_data(job.cell.scenario.config, job.run.cache_dir, device)
    send.send(job.compute(data, ResultStore(job.run.out, job.run.lock_timeout), device, host))
    send.close()
