"""The Python API: run a benchmark and read stored results as pandas DataFrames.

>>> import benchbackcompat
>>> df = benchbackcompat.run(["ext-class"], ["l2", "hoc"], seeds=[0, 1], overrides={"train.epochs": 2})
>>> df = benchbackcompat.load_results("results")          # one row per cell x metric x statistic
>>> entries = benchbackcompat.load_matrix_entries("results")  # one row per compatibility-matrix entry

The reference is docs/api.md.
"""
from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbackcompat.results.frames import (  # noqa: F401  (the public API)
    export_results,
    load_matrix_entries,
    load_results,
    read_records,
    results_frame,
)
from benchbackcompat.execution.request import API_DEFAULTS, RunRequest, flag_of

if TYPE_CHECKING:
    import pandas as pd


LOG_KEYWORDS = (  # the log, set up as on the command line (-v, -q, --log-file, --progress); not part of the request
    inspect.Parameter("verbose", inspect.Parameter.KEYWORD_ONLY, default=0, annotation=int),
    inspect.Parameter("quiet", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=bool),
    inspect.Parameter("log_file", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=str | Path | None),
    inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=bool | None),
)


def request_parameters() -> list[inspect.Parameter]:
    """:func:`run`'s parameters: one per :class:`RunRequest` field (the required ones positional too, the others
    keyword-only with the field's default, or the API's own in :data:`API_DEFAULTS`), then the log's."""
    types = typing.get_type_hints(RunRequest)  # without the bounds (Annotated), which the help of each option gives
    parameters = []
    for name, field in RunRequest.model_fields.items():
        if field.is_required():
            parameters.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=types[name]))
        else:
            parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=types[name],
                                                default=API_DEFAULTS.get(name, field.get_default(call_default_factory=True))))
    return [*parameters, *LOG_KEYWORDS]


def run(*args: Any, **options: Any) -> pd.DataFrame:
    """``benchbackcompat run`` from Python; returns :func:`load_results` of the cells of this run (failed cells
    are rows with their status; a dry run returns no rows).

    The keywords are :class:`RunRequest`'s fields, each one option of ``benchbackcompat run`` with the same help
    (listed below); None leaves a field at its default. ``scenarios``, ``methods`` and ``rerun`` are names (a list,
    or one comma-separated string); ``seeds`` a list, one seed or a range such as ``"0-2"``; ``overrides`` maps
    dotted keys to values as ``--set`` does (``{"train.epochs": 2, "methods.l2.weight": 3}``); ``grids`` maps
    ``methods.NAME.KEY`` to the values to search (``methods.NAME``: ``"default"``). ``verbose``/``quiet``/
    ``log_file``/``progress`` set up the log as on the command line. ``workers`` is 1 unless given: its worker
    processes re-run the calling script, so a script that passes ``workers="auto"`` or a number guards its run with
    ``if __name__ == "__main__":``. A misspelt keyword is a TypeError, bad input
    raises :class:`~benchbackcompat.errors.BenchError` with one line."""
    from benchbackcompat.runtime import logs
    from benchbackcompat.config import validate_model
    from benchbackcompat.execution.runner import run as run_request

    given = run.__signature__.bind(*args, **options).arguments
    values = {**API_DEFAULTS, **{name: value for name, value in given.items() if value is not None}}
    fields = {name: dict(value) if isinstance(value, Mapping) else value
              for name in RunRequest.model_fields if (value := values.get(name)) is not None}
    request = validate_model(RunRequest, fields, "benchbackcompat.run")
    logs.configure(-1 if given.get("quiet") else given.get("verbose", 0),
                   Path(log_file) if (log_file := given.get("log_file")) else None, given.get("progress"))
    return results_frame(run_request(request).records)


run.__signature__ = inspect.Signature(request_parameters(), return_annotation="pd.DataFrame")
run.__doc__ += "\n\nOptions (keyword, its option of ``benchbackcompat run``, its help):\n\n" + "\n".join(
    f"- ``{name}`` (``{flag_of(name)}``): {field.description}" for name, field in RunRequest.model_fields.items())


__all__ = ["RunRequest", "export_results", "load_matrix_entries", "load_results", "read_records", "results_frame", "run"]
