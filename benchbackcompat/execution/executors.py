"""Many cells on a cluster: a plan's cells split into shards, one submitit job per shard.

``--executor slurm`` submits the jobs to Slurm, ``--executor local`` runs the same jobs as local
processes; every job runs the same request with ``shard="i/n"`` (:func:`benchbackcompat.execution.runner.run`) on the
shared results directory (safe for concurrent writers), and the submitting process collects the records when
all are done.
"""
from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import torch

from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.logs import log
from benchbackcompat.cell import cell_fields
from benchbackcompat.execution.plan import Plan, assign_fingerprints
from benchbackcompat.record import CellRecord, parse_record
from benchbackcompat.execution.request import RunRequest

Runner = Callable[[RunRequest], Any]  # benchbackcompat.execution.runner.run


def submit(plan: Plan, request: RunRequest, run: Runner) -> list[CellRecord]:
    """Run ``plan`` as ``request.jobs`` jobs (default: one per cell) on ``request.executor`` (``local`` or
    ``slurm``) with submitit parameters ``request.executor_params``; each job calls ``run`` with its shard of the
    request. Returns every cell's record."""
    executor_name = request.executor
    try:
        import submitit
    except ImportError:
        raise BenchError(f"--executor {executor_name} needs submitit: pip install 'benchbackcompat[cluster]'") from None
    if executor_name == "slurm" and shutil.which("sbatch") is None:
        raise BenchError("--executor slurm: sbatch not found; run on a Slurm login node, or use --executor local or --shard I/N")
    from benchbackcompat.store import ResultStore

    count = min(request.jobs or len(plan.cells), len(plan.cells))
    executor = submitit.AutoExecutor(folder=plan.run.out / "jobs" / "%j", cluster=executor_name)
    try:
        executor.update_parameters(name="benchbackcompat", **request.executor_params)
    except (ValueError, TypeError) as error:
        raise BenchError(f"--executor-param: {error}".splitlines()[0]) from None
    shards = [f"{i}/{count}" for i in range(count)]
    parts = [request.model_copy(update={"executor": "inline", "jobs": None, "shard": shard, "workers": 1}) for shard in shards]
    submitted = executor.map_array(_job, [run] * count, parts)
    log.info(f"submitted {len(submitted)} {executor_name} jobs (logs in {plan.run.out / 'jobs'}); waiting for them")
    problems = {}
    for job, shard in zip(submitted, shards):
        try:
            job.result()
        except Exception as error:  # a dead job: its cells are reported, the others are kept
            problems[shard] = f"job {job.job_id} failed ({str(error).splitlines()[0] if str(error) else type(error).__name__}); log {job.paths.stderr}"
    assign_fingerprints(plan, torch.device("cpu"))  # the cells' keys need their data's fingerprints
    store = ResultStore(plan.run.out)
    records = []
    for index, cell in enumerate(plan.cells):
        record = store.record(cell.key)
        if record is None:
            reason = problems.get(f"{index % count}/{count}", "no record was written; see the job logs")
            record = parse_record({**cell_fields(cell), "dataset": cell.scenario.config.data.name, "status": "failed",
                                   "reason": reason})
        records.append(record)
    return records


def _job(run: Runner, request: RunRequest) -> int:
    """The body of one job: its shard of the request, computed in the job's process (its log is a file: no
    bars). Returns the number of records (they are read back from the store)."""
    from benchbackcompat.runtime.logs import configure

    configure(0, None, progress=False)
    return len(run(request).records)
