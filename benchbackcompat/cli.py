"""Command line: ``benchbackcompat run | list | describe | status | show | compare | export | leaderboard | validate | new-method``."""
from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from benchbackcompat.errors import BenchError

if TYPE_CHECKING:
    from benchbackcompat.report.methods import MethodInfo

LISTABLE = ("methods", "scenarios", "datasets", "backbones", "presets")


def _seeds(text: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds {text!r}: expected comma-separated integers, e.g. 0,1,2") from None


def build_parser() -> argparse.ArgumentParser:
    from benchbackcompat import __version__

    parser = argparse.ArgumentParser(prog="benchbackcompat", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    logging_options = argparse.ArgumentParser(add_help=False)
    logging_options.add_argument("-v", "--verbose", action="count", default=0, help="more log lines (debug)")
    logging_options.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")
    logging_options.add_argument("--log-file", type=Path, help="also write the log to this file (with time stamps)")
    logging_options.add_argument("--progress", action=argparse.BooleanOptionalAction,
                                 help="progress bars (default: only when stderr is a terminal)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser = functools.partial(sub.add_parser, parents=[logging_options])  # every command takes them

    run = sub.add_parser("run", help="train, evaluate and print the leaderboard")
    run.add_argument("--scenario", required=True, help="comma-separated scenario names of the preset (or 'all')")
    run.add_argument("--methods", required=True, help="comma-separated method names (see `list methods`)")
    run.add_argument("--preset", default="quick", help="preset name in scenarios/ or a TOML file (default: quick)")
    run.add_argument("--dataset", help="override data.name of every scenario")
    run.add_argument("--data-root", type=Path, help="folder holding the dataset files or zips")
    run.add_argument("--seeds", type=_seeds, help="comma-separated seeds (default 0)")
    run.add_argument("--out", type=Path, help="results directory (default ./results)")
    run.add_argument("--device", help="auto (default), cpu or cuda")
    run.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE",
                     help="override a scenario field (train.epochs=2) or a method hyperparameter (methods.l2.weight=3)")
    run.add_argument("--grid", dest="grids", action="append", default=[], metavar="methods.NAME.KEY=V1,V2",
                     help="search these values of a method hyperparameter (repeatable: the Cartesian product) on a validation "
                          "split of the training data, then run the selected setting; methods.NAME alone: the method's own grid")
    run.add_argument("--force", action="store_true",
                     help="recompute every cell of the plan, even finished ones (shared models are keyed by their own "
                          "code and data identity, and reused)")
    run.add_argument("--rerun", metavar="METHOD[,METHOD]", default="",
                     help="recompute the cells of these methods, even finished ones")
    run.add_argument("--lock-timeout", type=float, metavar="SECONDS",
                     help="give up waiting for a cell or model that another process holds (default: wait)")
    run.add_argument("--dry-run", action="store_true", help="print the resolved configuration and the planned steps")
    run.add_argument("--no-share", action="store_true",
                     help="train every model inside its own cell (no models shared across methods; for comparisons)")
    run.add_argument("--channels-last", choices=("auto", "on", "off"), help="NHWC training (default auto: on CUDA and CPU)")
    run.add_argument("--compile", action="store_true", help="torch.compile the backbone for training")
    run.add_argument("--shard", metavar="I/N", help="run only shard I of N of the cells (for any scheduler)")
    run.add_argument("--executor", choices=("inline", "local", "slurm"), default="inline",
                     help="inline (default): here; local/slurm: one submitit job per shard of cells")
    run.add_argument("--jobs", type=int, help="number of jobs for --executor local|slurm (default: one per cell)")
    run.add_argument("--workers", type=int, default=1,
                     help="run N cells at once on this machine, the CPU threads split among them (default 1)")
    run.add_argument("--executor-param", action="append", default=[], metavar="KEY=VALUE",
                     help="submitit parameter, e.g. slurm_partition=gpu, timeout_min=600, gpus_per_node=1")

    listing = sub.add_parser("list", help="list what is available")
    listing.add_argument("what", choices=LISTABLE)
    listing.add_argument("--preset", default="quick")
    listing.add_argument("--params", action="store_true", help="with `list methods`: every method's hyperparameters")

    describe = sub.add_parser("describe", help="a method's hyperparameters (type, default, range), scenarios and paper")
    describe.add_argument("method", help="method name (see `list methods`)")
    describe.add_argument("--preset", default="quick", help="preset whose scenarios are checked for support")

    status = sub.add_parser("status", help="list finished, partial, pending, failed and stale cells of a results directory")
    status.add_argument("--results", type=Path, default=Path("results"))

    show = sub.add_parser("show", help="print a cell's compatibility matrix and metrics")
    show.add_argument("cell", nargs="?", help="cell key (a prefix is enough) or label scenario/method/seedN; omit to list cells")
    show.add_argument("--results", type=Path, default=Path("results"))

    compare = sub.add_parser("compare", help="two results directories side by side: differences per method and scenario")
    compare.add_argument("a", type=Path, help="results directory A")
    compare.add_argument("b", type=Path, help="results directory B")
    compare.add_argument("--statistics", default="AC,AA,ACA,old_self,self,cross,p_com,p_up",
                         help="comma-separated statistics to compare (default: %(default)s)")

    export = sub.add_parser("export", help="results as a table file (.csv or .parquet) plus a table of matrix entries")
    export.add_argument("out", type=Path, help="file to write, e.g. results.parquet (the matrix entries go to NAME-matrix.parquet)")
    export.add_argument("--results", type=Path, action="append", help="results directory (repeatable; default ./results)")

    board = sub.add_parser("leaderboard", help="render the leaderboard from stored results (no training)")
    board.add_argument("--results", type=Path, action="append",
                       help="results directory (repeatable, merged; on a duplicate cell the first listed wins; default ./results); "
                            "its calibration/*.json (benchbackcompat calibrate --summary) go into the claims report")
    board.add_argument("--out", type=Path, help="write the leaderboard folder (Markdown pages, figures, CSV, JSON) instead of printing")
    board.add_argument("--grids", action="store_true", help="also print the whole grid of every method whose hyperparameters were selected")

    calibration = sub.add_parser("calibrate", help="train a preset's cells as given and longer: did the self-tests converge?")
    calibration.add_argument("--preset", default="cpu")
    calibration.add_argument("--scenario", default="ext-class", help="comma-separated scenario names of the preset")
    calibration.add_argument("--methods", default="independent", help="comma-separated method names")
    calibration.add_argument("--seeds", default="0", help="comma-separated seeds")
    calibration.add_argument("--out", type=Path, default=Path("results-calibration"), help="results folder of both runs")
    calibration.add_argument("--factor", type=float, default=1.5, help="epochs multiplier of the longer run")
    calibration.add_argument("--metric", default="cmc@1")
    calibration.add_argument("--tolerance", type=float, default=2.0, help="largest self-test change allowed, points")
    calibration.add_argument("--min-gain", type=float, default=15.0, help="smallest update gain of a single update, points")
    calibration.add_argument("--base", type=Path, help="results folder of the run as given (default OUT/base)")
    calibration.add_argument("--summary", type=Path, help="also write the measured self-tests here as JSON (a results "
                             "folder's calibration/*.json go into the claims report)")
    calibration.add_argument("run_args", nargs="*", metavar="-- RUN-ARGS", help="more `run` arguments for both runs")

    validate = sub.add_parser("validate", help="validate a preset and method hyperparameters without running")
    validate.add_argument("--preset", default="quick")
    validate.add_argument("--methods", default="", help="comma-separated methods to validate too")

    new_method = sub.add_parser("new-method", help="create an installable method plugin package (see docs/writing-a-method.md)")
    new_method.add_argument("name", help="method name: lower-case letters, digits and hyphens, e.g. my-method")
    new_method.add_argument("--dir", type=Path, help="folder to create (default ./bbc-NAME)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from benchbackcompat import logs
    from benchbackcompat.interrupts import watching

    args = build_parser().parse_args(argv)
    logs.configure(-1 if args.quiet else args.verbose, args.log_file, args.progress)
    try:
        with watching():  # a real Ctrl-C stops the run; a KeyboardInterrupt raised by plugin code fails its cell
            return COMMANDS[args.command](args)
    except BenchError as error:
        logs.log.error(str(error))
        return 2
    except KeyboardInterrupt:
        logs.log.error("interrupted: finished steps are saved; run the same command again to resume")
        return 130
    except OSError as error:  # a full or read-only disk, a missing folder: one line naming the path
        where = f" {error.filename}" if error.filename else ""
        logs.log.error(f"cannot access{where}: {error.strerror or error}; check the path, its permissions and the free "
                       "space")
        return 2


def cmd_run(args: argparse.Namespace) -> int:
    from benchbackcompat.report import leaderboard_tables

    records, code = run_cells(args)
    if records:
        print(leaderboard_tables(records))
    return code


def build_run_plan(args: argparse.Namespace):
    """The validated plan of ``run`` arguments and its plugin host (also rebuilt by each ``--workers`` process)."""
    from benchbackcompat.plugin_host import PluginHost
    from benchbackcompat.presets import resolve_run, split_list
    from benchbackcompat.engine import distributed
    from benchbackcompat.logs import log
    from benchbackcompat.plan import make_plan, rerun_methods, select_shard

    data: dict = {}
    if args.dataset:
        data["name"] = args.dataset
    if args.data_root:
        data["root"] = str(args.data_root)
    run = resolve_run(
        preset=args.preset, scenarios=split_list(args.scenario), methods=split_list(args.methods), seeds=args.seeds,
        scenario_overrides={"data": data} if data else None, assignments=args.assignments, grids=args.grids, out=args.out,
        device=args.device,
    )
    if args.no_share:
        run = run.model_copy(update={"share_models": False})
    if args.lock_timeout is not None:
        if args.lock_timeout <= 0:
            raise BenchError(f"--lock-timeout {args.lock_timeout:g}: expected a positive number of seconds")
        run = run.model_copy(update={"lock_timeout": args.lock_timeout})
    if args.channels_last or args.compile:
        run = run.model_copy(update={"channels_last": args.channels_last or run.channels_last, "compile": args.compile})
    distributed.initialise_from_environment(run.device)  # under torchrun: one rank of a data-parallel cell
    if not distributed.is_main():
        log.setLevel(max(log.level, logging.WARNING))  # one rank reports the cells
    host = PluginHost()
    plan = make_plan(run, host)
    plan.rerun = rerun_methods(plan, args.force, split_list(args.rerun))
    if args.shard:
        plan.cells = select_shard(plan.cells, args.shard)
    host.register_extensions()
    return plan, host


def run_cells(args: argparse.Namespace) -> tuple[list, int]:
    """Plan and execute ``run``'s cells; returns their records (none for --dry-run and on the other ranks of a
    data-parallel run) and the exit code (1 when a cell failed or diverged)."""
    from benchbackcompat.engine import distributed
    from benchbackcompat.logs import log
    from benchbackcompat.plan import execute, run_summary, selected_cells

    plan, host = build_run_plan(args)
    run = plan.run
    if args.dry_run:
        resolved = {name: method.params.model_dump(mode="json") for name, method in plan.methods.items()}
        print(json.dumps({**run.model_dump(mode="json"), "method_params": resolved}, indent=2))
        print(plan.describe())
        return [], 0
    if args.workers != 1 and (args.executor != "inline" or distributed.active() or plan.rerun):
        raise BenchError("--workers runs cells in processes on this machine: use it without --executor, torchrun, "
                         "--force and --rerun")
    started = time.perf_counter()
    if args.executor == "inline" and args.workers != 1:
        from benchbackcompat.workers import execute_in_workers

        records = execute_in_workers(args, plan, args.workers, build_run_plan)
    elif args.executor == "inline":
        records = execute(plan, host)
    else:
        from benchbackcompat.executors import submit

        records = submit(plan, args.executor, args.jobs, args.executor_param)
    # grids: the selected settings on the full protocol, as soon as their selection is recorded (not sharded: with
    # shards or jobs, the processes that find a selection complete run its cells, each cell once under its lock)
    finals, waiting = selected_cells(plan)
    if finals:
        records += execute(plan, host, finals) if args.executor == "inline" else submit(replace(plan, cells=finals), args.executor, args.jobs, args.executor_param)
    if not distributed.is_main():
        return [], 0
    for line in waiting:
        log.info(f"grid {line}")
    summary, code = run_summary(records, time.perf_counter() - started, run.out)
    (log.warning if code else log.info)(summary)  # failed or diverged cells stay visible under -q
    return records, code


def cmd_list(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from benchbackcompat.logs import log
    from benchbackcompat.plugin_host import PluginHost

    host = PluginHost()
    if args.what == "methods":
        host.load_all()
        rows = [[name, "available", cls.description] for name, cls in sorted(host.methods().items())]
        rows += [[name, "unavailable", failure.error] for name, failure in sorted(host.failures.items())]
        rows += [[name, "conflict", why] for name, why in sorted(host.conflicts.items())]
        if args.params:
            from benchbackcompat.describe import parameter_rows

            rows = [[name, status, "; ".join(f"{p['name']}={p['default']}" for p in parameter_rows(host.methods()[name].Params))
                     if status == "available" else text] for name, status, text in rows]
        print(tabulate(rows, headers=["method", "status", "hyperparameters (defaults; `describe METHOD` for more)"
                                      if args.params else "description"], tablefmt="github"))
        for why in host.conflicts.values():
            log.error(why)
        if host.conflicts:
            return 2
    elif args.what == "scenarios":
        from benchbackcompat.presets import load_preset

        preset = load_preset(args.preset)
        rows = [[name, table.get("kind", "?"), table.get("description", "")] for name, table in preset["scenarios"].items()]
        print(tabulate(rows, headers=["scenario", "kind", f"description (preset {args.preset})"], tablefmt="github"))
    elif args.what == "presets":
        from benchbackcompat.presets import available_presets, load_preset

        rows = [[name, str(path), load_preset(name).get("description", "")] for name, path in available_presets().items()]
        print(tabulate(rows, headers=["preset", "file", "description"], tablefmt="github"))
    else:
        host.load_all()
        host.register_extensions()
        if args.what == "datasets":
            from benchbackcompat.data.registry import DATASETS as registry
        else:
            from benchbackcompat.models.registry import BACKBONES as registry
        rows = [[name, entry.description] for name, entry in sorted(registry.items())]
        if args.what == "backbones":
            rows.append(["timm:<name>", "any timm model by name, e.g. timm:vit_base_patch16_224"])
        print(tabulate(rows, headers=[args.what[:-1], "description"], tablefmt="github"))
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    from benchbackcompat.describe import describe_method
    from benchbackcompat.plugin_host import PluginHost
    from benchbackcompat.presets import load_preset, resolve_run

    method = PluginHost().method_class(args.method)
    scenarios = resolve_run(preset=args.preset, scenarios=list(load_preset(args.preset)["scenarios"]),
                            methods=[args.method]).scenarios
    print(describe_method(args.method, method, scenarios, args.preset))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from benchbackcompat.status import render_status

    print(render_status(args.results))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from benchbackcompat.report.curves import curve_summary
    from benchbackcompat.store import ResultStore
    from benchbackcompat.record import FinishedRecord

    store = ResultStore(args.results)
    records = list(store.records())
    saved = {key: ", ".join(map(str, steps)) for key, steps in store.partial_cells().items()}
    partial = {key: (store.cell_entry(key) or {}).get("label", "(label not recorded)") for key in saved}
    if not args.cell:
        rows = [[r.key, r.label, r.status] for r in records]
        rows += [[key, label, f"partial (steps {saved[key]} saved)"] for key, label in partial.items()]
        print(tabulate(rows, headers=["key", "cell", "status"], tablefmt="github") if rows else f"no results in {args.results}")
        return 0
    matches = [r.key for r in records if r.key.startswith(args.cell) or r.label == args.cell]
    matches += [key for key, label in partial.items() if key.startswith(args.cell) or label == args.cell]
    if len(matches) != 1:
        known = ", ".join([r.label for r in records] + list(partial.values())) or "(none)"
        raise BenchError(f"{len(matches)} cells match {args.cell!r} in {args.results}; give a longer key or one of: {known}")
    if matches[0] in partial:
        print(f"{partial[matches[0]]}  key {matches[0]}  status partial  device unknown")
        print(f"steps {saved[matches[0]]} saved; run the same command again to resume")
        return 0
    record = next(r for r in records if r.key == matches[0])
    print(f"{record.label}  key {record.key}  status {record.status}  device {record.device or 'unknown'}")
    if not isinstance(record, FinishedRecord):
        print(record.reason)
        return 0
    for metric, matrix in record.matrices.items():
        T = len(matrix)
        rows = [[f"q{t}", *(f"{matrix[t][k]:.2f}" if k <= t and matrix[t][k] is not None else "" for k in range(T))] for t in range(T)]
        print(f"\n{metric} (rows: query model t, columns: gallery model k)")
        print(tabulate(rows, headers=["", *(f"g{k}" for k in range(T))], tablefmt="github", disable_numparse=True))
        values = record.metrics[metric].scalars()
        print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()))
    print("\ntraining curves (per step: first -> last epoch, minimum)")
    print(curve_summary(store.curves(record.key)))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from benchbackcompat.compare import compare_results, render
    from benchbackcompat.presets import split_list

    table, notes = compare_results(args.a, args.b, tuple(split_list(args.statistics)))
    print(render(table, notes, str(args.a), str(args.b)))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from benchbackcompat.frames import export_results

    written = export_results(args.results or [Path("results")], args.out)
    print("wrote " + " and ".join(str(path) for path in written))
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from benchbackcompat.report import leaderboard_tables
    from benchbackcompat.report.calibration import read_calibrations
    from benchbackcompat.report.merge import read_results
    from benchbackcompat.report.provenance import render_date
    from benchbackcompat.report.publish import command_line, write_leaderboard

    roots = args.results or [Path("results")]
    merged = read_results(roots)  # duplicate cells: see benchbackcompat/report/merge.py
    if not merged.records:
        raise BenchError(f"no results found in {', '.join(map(str, roots))}; run `benchbackcompat run` first")
    if args.out:
        written = write_leaderboard(merged, args.out, command_line(roots, args.out), render_date(),
                                    read_calibrations(roots), installed_methods({r.method for r in merged.records}))
        print(f"wrote {len(written)} files to {args.out} ({args.out / 'README.md'})")
    else:
        print(leaderboard_tables(merged.records, grids=args.grids))
    if merged.superseded:
        print(f"{len(merged.superseded)} older records of the same cells (other method code, results version or data) "
              "left out; `benchbackcompat status` lists them as stale", file=sys.stderr)
    if merged.duplicates:
        print(f"{len(merged.duplicates)} duplicate cells counted once (the first --results directory wins, finished "
              f"records over unfinished ones)", file=sys.stderr)
    return 0


def installed_methods(names: set[str]) -> dict[str, MethodInfo]:
    """What the installed plugins declare about the methods ``names`` (``report.methods.MethodInfo``), for their
    leaderboard pages; a method whose plugin is missing or broken is left out (its page says so)."""
    from benchbackcompat.plugin_host import PluginHost
    from benchbackcompat.report.methods import MethodInfo

    host = PluginHost()
    found: dict[str, MethodInfo] = {}
    for name in sorted(names):
        try:
            found[name] = MethodInfo.of(host.method_class(name))
        except BenchError:
            continue
    return found


def cmd_validate(args: argparse.Namespace) -> int:
    from benchbackcompat.plugin_host import PluginHost
    from benchbackcompat.presets import load_preset, resolve_run, split_list
    from benchbackcompat.plan import make_plan

    scenarios = list(load_preset(args.preset)["scenarios"])
    methods = split_list(args.methods) or ["independent"]
    make_plan(resolve_run(preset=args.preset, scenarios=scenarios, methods=methods), PluginHost())
    print(f"preset {args.preset!r}: {len(scenarios)} scenarios valid; methods valid: {', '.join(methods)}")
    return 0


def cmd_new_method(args: argparse.Namespace) -> int:
    from benchbackcompat.scaffold import create_plugin

    files = create_plugin(args.name, args.dir)
    root = files[0].parent
    print(f"created the plugin package of method {args.name!r} in {root}:")
    print("\n".join(f"  {path}" for path in files))
    print(f"next: pip install -e {root} && benchbackcompat list methods && python -m pytest {root / 'tests'}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from benchbackcompat.calibrate import CalibrationOptions, calibrate

    options = CalibrationOptions(preset=args.preset, scenario=args.scenario, methods=args.methods, seeds=args.seeds,
                                 out=args.out, factor=args.factor, metric=args.metric, tolerance=args.tolerance,
                                 min_gain=args.min_gain, base=args.base, summary=args.summary,
                                 run_args=tuple(a for a in args.run_args if a != "--"))
    result = calibrate(options, lambda argv: run_cells(build_parser().parse_args(argv))[0])
    print(result.text)
    return 0


COMMANDS = {"run": cmd_run, "list": cmd_list, "describe": cmd_describe, "status": cmd_status, "show": cmd_show,
            "compare": cmd_compare, "export": cmd_export, "leaderboard": cmd_leaderboard, "validate": cmd_validate,
            "new-method": cmd_new_method, "calibrate": cmd_calibrate}

if __name__ == "__main__":
    sys.exit(main())
