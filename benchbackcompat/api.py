"""The Python API: run a benchmark and read stored results as pandas DataFrames.

>>> import benchbackcompat
>>> df = benchbackcompat.run(["ext-class"], ["l2", "hoc"], seeds=[0, 1], overrides={"train.epochs": 2})
>>> df = benchbackcompat.load_results("results")          # one row per cell x metric x statistic
>>> entries = benchbackcompat.load_matrix_entries("results")  # one row per compatibility-matrix entry

The reference is docs/api.md.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from benchbackcompat.results.frames import (  # noqa: F401  (the public API)
    export_results,
    load_matrix_entries,
    load_results,
    read_records,
    results_frame,
)
from benchbackcompat.execution.request import RunRequest

if TYPE_CHECKING:
    import pandas as pd


def run(
    scenarios: str | Sequence[str],
    methods: str | Sequence[str],
    *,
    preset: str = "quick",
    seeds: int | str | Sequence[int] | None = None,
    dataset: str | None = None,
    data_root: str | Path | None = None,
    out: str | Path | None = None,
    device: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    grids: Mapping[str, Sequence[Any] | Literal["default"]] | None = None,
    smoke: bool = False,
    force: bool = False,
    rerun: Sequence[str] = (),
    share_models: bool = True,
    channels_last: Literal["auto", "on", "off"] | None = None,
    compile: bool = False,
    lock_timeout: float | None = None,
    cell_timeout: float | None = None,
    dry_run: bool = False,
    shard: str | None = None,
    executor: Literal["inline", "local", "slurm"] = "inline",
    jobs: int | None = None,
    workers: int = 1,
    executor_params: Mapping[str, Any] | None = None,
    verbose: int = 0,
    quiet: bool = False,
    log_file: str | Path | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """``benchbackcompat run`` from Python; returns :func:`load_results` of the cells of this run (failed cells
    are rows with their status; a dry run returns no rows).

    The keywords are :class:`RunRequest`'s fields, each one option of ``benchbackcompat run`` with the same help
    (``RunRequest.model_fields[name].description``); None leaves a field at its default. ``scenarios`` and
    ``methods`` are names (a list, or one comma-separated string); ``seeds`` a list, one seed or a range such as
    ``"0-2"``; ``overrides`` maps dotted keys to values as ``--set`` does (``{"train.epochs": 2,
    "methods.l2.weight": 3}``); ``grids`` maps ``methods.NAME.KEY`` to the values to search (``methods.NAME``:
    ``"default"``). ``verbose``/``quiet``/``log_file``/``progress`` set up the log as on the command line. Bad input
    raises :class:`~benchbackcompat.errors.BenchError` with one line."""
    from benchbackcompat.runtime import logs
    from benchbackcompat.config import validate_model
    from benchbackcompat.execution.runner import run as run_request

    given = locals()
    fields = {name: dict(value) if isinstance(value, Mapping) else value
              for name in RunRequest.model_fields if (value := given[name]) is not None}
    request = validate_model(RunRequest, fields, "benchbackcompat.run")
    logs.configure(-1 if quiet else verbose, Path(log_file) if log_file else None, progress)
    return results_frame(run_request(request).records)


__all__ = ["RunRequest", "export_results", "load_matrix_entries", "load_results", "read_records", "results_frame", "run"]
