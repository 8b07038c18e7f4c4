"""Many cells on a cluster: a plan's cells split into shards, one submitit job per shard.

``--executor slurm`` submits the jobs to Slurm, ``--executor local`` runs the same jobs as local
processes; every job runs ``benchbackcompat run ... --shard i/n`` on the shared results directory
(safe for concurrent writers), and the submitting process collects the records when all are done.
"""
from __future__ import annotations

import argparse
import shutil
from typing import Any

from benchbackcompat.errors import BenchError
from benchbackcompat.run import Plan


def run_shard(args: argparse.Namespace) -> int:
    """The body of one job: ``benchbackcompat run`` restricted to its shard, in this process."""
    from benchbackcompat.cli import cmd_run

    return cmd_run(args)


def parse_parameters(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` executor parameters (``timeout_min=600``, ``slurm_partition=gpu``); integers are converted."""
    parameters: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BenchError(f"--executor-param {pair!r}: expected KEY=VALUE, e.g. --executor-param slurm_partition=gpu")
        parameters[key] = int(value) if value.lstrip("-").isdigit() else value
    return parameters


def submit(args: argparse.Namespace, plan: Plan) -> list[dict[str, Any]]:
    """Run ``plan`` as ``args.jobs`` jobs (default: one per cell) on ``args.executor``; returns every cell's record."""
    try:
        import submitit
    except ImportError:
        raise BenchError(f"--executor {args.executor} needs submitit: pip install 'benchbackcompat[cluster]'") from None
    if args.executor == "slurm" and shutil.which("sbatch") is None:
        raise BenchError("--executor slurm: sbatch not found; run on a Slurm login node, or use --executor local or --shard I/N")
    from benchbackcompat.store import ResultStore

    count = min(args.jobs or len(plan.cells), len(plan.cells))
    executor = submitit.AutoExecutor(folder=plan.run.out / "jobs" / "%j", cluster=args.executor)
    try:
        executor.update_parameters(name="benchbackcompat", **parse_parameters(args.executor_param))
    except (ValueError, TypeError) as error:
        raise BenchError(f"--executor-param: {error}".splitlines()[0]) from None
    shards = [argparse.Namespace(**{**vars(args), "executor": "inline", "shard": f"{i}/{count}", "jobs": None})
              for i in range(count)]
    jobs = executor.map_array(run_shard, shards)
    print(f"submitted {len(jobs)} {args.executor} jobs (logs in {plan.run.out / 'jobs'}); waiting for them")
    problems = {}
    for job, shard in zip(jobs, shards):
        try:
            job.result()
        except Exception as error:  # a dead job: its cells are reported, the others are kept
            problems[shard.shard] = f"job {job.job_id} failed ({str(error).splitlines()[0] if str(error) else type(error).__name__}); log {job.paths.stderr}"
    import torch

    from benchbackcompat.run import assign_fingerprints

    assign_fingerprints(plan, torch.device("cpu"))  # the cells' keys need their data's fingerprints
    store = ResultStore(plan.run.out)
    records = []
    for index, cell in enumerate(plan.cells):
        record = store.record(cell.key)
        if record is None:
            reason = problems.get(f"{index % count}/{count}", "no record was written; see the job logs")
            record = {"key": cell.key, "label": cell.label, "scenario": cell.scenario.name, "kind": cell.scenario.config.kind,
                      "preset": cell.preset, "method": cell.method, "seed": cell.seed, "dataset": cell.scenario.config.data.name,
                      "config": cell.scenario.config.model_dump(mode="json"), "status": "failed", "reason": reason}
        records.append(record)
    return records
