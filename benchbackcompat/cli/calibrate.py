"""``benchbackcompat calibrate``: a preset's cells as given and longer, to check the scale."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchbackcompat.cli.options import Parser, logging_options
from benchbackcompat.cli.run import request_parser, run_request
from benchbackcompat.errors import BenchError


def register(sub: Any) -> None:
    calibration = sub.add_parser("calibrate", help="train a preset's cells as given and longer: did the self-tests converge?")
    calibration.add_argument("--preset", default="cpu", help="preset name or TOML file (default: cpu)")
    calibration.add_argument("--scenario", default="ext-class", help="comma-separated scenario names of the preset")
    calibration.add_argument("--methods", default="independent", help="comma-separated method names")
    calibration.add_argument("--seeds", default="0", help="comma-separated seeds (default: 0)")
    calibration.add_argument("--out", type=Path, default=Path("results-calibration"), help="results folder of both runs")
    calibration.add_argument("--factor", type=float, default=1.5, help="epochs multiplier of the longer run")
    calibration.add_argument("--metric", default="cmc@1", help="metric whose self-tests are compared (default: cmc@1)")
    calibration.add_argument("--tolerance", type=float, default=2.0, help="largest self-test change allowed, points")
    calibration.add_argument("--min-gain", type=float, default=15.0, help="smallest update gain of a single update, points")
    calibration.add_argument("--base", type=Path, help="results folder of the run as given (default OUT/base)")
    calibration.add_argument("--summary", type=Path, help="also write the measured self-tests here as JSON (a results "
                             "folder's calibration/*.json go into the claims page)")
    calibration.add_argument("run_args", nargs="*", metavar="-- RUN-ARGS", help="more `run` arguments for both runs")
    calibration.set_defaults(handler=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from benchbackcompat.execution.runner import run
    from benchbackcompat.results.calibrate import CalibrationOptions, calibrate

    run_args = tuple(a for a in args.run_args if a != "--")
    _no_logging_options(run_args)
    own = {"preset": args.preset, "scenarios": args.scenario, "methods": args.methods, "seeds": args.seeds}
    options = CalibrationOptions(preset=args.preset, scenario=args.scenario, methods=args.methods, seeds=args.seeds,
                                 out=args.out, factor=args.factor, metric=args.metric, tolerance=args.tolerance,
                                 min_gain=args.min_gain, base=args.base, summary=args.summary, run_args=run_args,
                                 request=run_request(request_parser(required=False).parse_args(run_args), own))
    result = calibrate(options, lambda request: run(request).records)
    print(result.text)
    return 0


def _no_logging_options(run_args: tuple[str, ...]) -> None:
    """-v, -q, --log-file and --progress set up this command's log before either run starts: after `--` they would
    reach the run's parser, which does not take them."""
    given = Parser(add_help=False)
    logging_options(given)
    found = ", ".join("--" + dest.replace("_", "-") for dest in vars(given.parse_known_args(list(run_args))[0]))
    if found:
        raise BenchError(f"{found} after `--`: calibrate's own log options; give them before `--`, e.g. "
                         "`benchbackcompat calibrate --no-progress --scenario ... -- --workers 2`")
