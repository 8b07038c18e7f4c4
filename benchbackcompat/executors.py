"""Many cells on a cluster: a plan's cells split into shards, one submitit job per shard.

``--executor slurm`` submits the jobs to Slurm, ``--executor local`` runs the same jobs as local
processes; every job runs ``benchbackcompat run ... --shard i/n`` on the shared results directory
(safe for concurrent writers), and the submitting process collects the records when all are done.
"""
from __future__ import annotations

import shutil
from typing import Any

import torch

from benchbackcompat.errors import BenchError
from benchbackcompat.logs import log
from benchbackcompat.engine.cell import cell_fields
from benchbackcompat.plan import Plan, assign_fingerprints, run_shard
from benchbackcompat.record import CellRecord, parse_record


def parse_parameters(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` executor parameters (``timeout_min=600``, ``slurm_partition=gpu``); integers are converted."""
    parameters: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BenchError(f"--executor-param {pair!r}: expected KEY=VALUE, e.g. --executor-param slurm_partition=gpu")
        parameters[key] = int(value) if value.lstrip("-").isdigit() else value
    return parameters


def submit(plan: Plan, executor_name: str, jobs: int | None = None, parameters: list[str] = ()) -> list[CellRecord]:
    """Run ``plan`` as ``jobs`` jobs (default: one per cell) on ``executor_name`` (``local`` or ``slurm``) with
    submitit ``parameters`` (``KEY=VALUE``); returns every cell's record."""
    try:
        import submitit
    except ImportError:
        raise BenchError(f"--executor {executor_name} needs submitit: pip install 'benchbackcompat[cluster]'") from None
    if executor_name == "slurm" and shutil.which("sbatch") is None:
        raise BenchError("--executor slurm: sbatch not found; run on a Slurm login node, or use --executor local or --shard I/N")
    from benchbackcompat.store import ResultStore

    count = min(jobs or len(plan.cells), len(plan.cells))
    executor = submitit.AutoExecutor(folder=plan.run.out / "jobs" / "%j", cluster=executor_name)
    try:
        executor.update_parameters(name="benchbackcompat", **parse_parameters(list(parameters)))
    except (ValueError, TypeError) as error:
        raise BenchError(f"--executor-param: {error}".splitlines()[0]) from None
    shards = [f"{i}/{count}" for i in range(count)]
    submitted = executor.map_array(run_shard, [plan.run] * count, shards, [plan.rerun] * count)
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
