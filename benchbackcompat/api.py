"""The Python API: run a benchmark and read stored results as pandas DataFrames.

>>> import benchbackcompat
>>> df = benchbackcompat.run(scenario="ext-class", methods=["l2", "hoc"], seeds=[0, 1], set={"train.epochs": 2})
>>> df = benchbackcompat.load_results("results")          # one row per cell x metric x statistic
>>> entries = benchbackcompat.load_matrix_entries("results")  # one row per compatibility-matrix entry
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from benchbackcompat.errors import BenchError
from benchbackcompat.frames import (  # noqa: F401  (the public API)
    export_results,
    load_matrix_entries,
    load_results,
    read_records,
    results_frame,
)

if TYPE_CHECKING:
    import pandas as pd

REPEATABLE = {"set", "executor_param"}  # options given several times on the command line


def cli_arguments(options: Mapping[str, Any]) -> list[str]:
    """``benchbackcompat run`` arguments from keyword options: ``no_share=True`` -> ``--no-share``,
    ``seeds=[0, 1]`` -> ``--seeds 0,1``, ``set={"train.epochs": 2}`` -> ``--set train.epochs=2``, ``verbose=2`` -> ``-v -v``."""
    argv: list[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif name == "verbose":  # a counted flag: verbose=2 -> -v -v
            argv += [flag] * int(value)
        elif name in REPEATABLE:
            pairs = value.items() if isinstance(value, Mapping) else (str(v).split("=", 1) for v in value)
            for key, item in pairs:
                argv += [flag, f"{key}={json.dumps(item) if isinstance(item, list | bool) else item}"]
        elif isinstance(value, list | tuple):
            argv += [flag, ",".join(str(v) for v in value)]
        else:
            argv += [flag, str(value)]
    return argv


def run(scenario: str | list[str], methods: str | list[str], **options: Any) -> pd.DataFrame:
    """``benchbackcompat run`` from Python, with the command's options as keywords (see :func:`cli_arguments`;
    ``verbose``/``quiet``/``log_file``/``progress`` as on the command line); returns :func:`load_results` of the
    cells of this run. Bad input raises :class:`BenchError`; failed cells are rows with their status."""
    from benchbackcompat import logs
    from benchbackcompat.cli import build_parser, run_cells

    argv = ["run", *cli_arguments({"scenario": scenario, "methods": methods, **options})]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:
        raise BenchError(f"invalid arguments for benchbackcompat.run: {' '.join(argv[1:])} (see the message above; "
                         "options are those of `benchbackcompat run --help`, dashes written as underscores)") from None
    logs.configure(-1 if args.quiet else args.verbose, args.log_file, args.progress)
    records, _ = run_cells(args)
    return results_frame(records)
