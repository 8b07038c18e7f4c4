"""Command line: ``benchbackcompat run | list | status | show | leaderboard | validate | new-method``."""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from benchbackcompat.errors import BenchError

LISTABLE = ("methods", "scenarios", "datasets", "backbones", "presets")


def _seeds(text: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds {text!r}: expected comma-separated integers, e.g. 0,1,2") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchbackcompat", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

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
    run.add_argument("--channels-last", choices=("auto", "on", "off"), help="NHWC training (default auto: on CUDA)")
    run.add_argument("--compile", action="store_true", help="torch.compile the backbone for training")
    run.add_argument("--shard", metavar="I/N", help="run only shard I of N of the cells (for any scheduler)")
    run.add_argument("--executor", choices=("inline", "local", "slurm"), default="inline",
                     help="inline (default): here; local/slurm: one submitit job per shard of cells")
    run.add_argument("--jobs", type=int, help="number of jobs for --executor local|slurm (default: one per cell)")
    run.add_argument("--executor-param", action="append", default=[], metavar="KEY=VALUE",
                     help="submitit parameter, e.g. slurm_partition=gpu, timeout_min=600, gpus_per_node=1")

    listing = sub.add_parser("list", help="list what is available")
    listing.add_argument("what", choices=LISTABLE)
    listing.add_argument("--preset", default="quick")

    status = sub.add_parser("status", help="list finished, partial, pending, failed and stale cells of a results directory")
    status.add_argument("--results", type=Path, default=Path("results"))

    show = sub.add_parser("show", help="print a cell's compatibility matrix and metrics")
    show.add_argument("cell", nargs="?", help="cell key (a prefix is enough) or label scenario/method/seedN; omit to list cells")
    show.add_argument("--results", type=Path, default=Path("results"))

    board = sub.add_parser("leaderboard", help="render the leaderboard from stored results (no training)")
    board.add_argument("--results", type=Path, action="append",
                       help="results directory (repeatable, merged; on a duplicate cell the first listed wins; default ./results)")
    board.add_argument("--out", type=Path, help="write the leaderboard folder (Markdown pages, figures, CSV, JSON) instead of printing")
    board.add_argument("--grids", action="store_true", help="also print the whole grid of every method whose hyperparameters were selected")

    validate = sub.add_parser("validate", help="validate a preset and method hyperparameters without running")
    validate.add_argument("--preset", default="quick")
    validate.add_argument("--methods", default="", help="comma-separated methods to validate too")

    new_method = sub.add_parser("new-method", help="create an installable method plugin package (see docs/writing-a-method.md)")
    new_method.add_argument("name", help="method name: lower-case letters, digits and hyphens, e.g. my-method")
    new_method.add_argument("--dir", type=Path, help="folder to create (default ./bbc-NAME)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from benchbackcompat.interrupts import watching

    args = build_parser().parse_args(argv)
    try:
        with watching():  # a real Ctrl-C stops the run; a KeyboardInterrupt raised by plugin code fails its cell
            return COMMANDS[args.command](args)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished steps are saved; run the same command again to resume", file=sys.stderr)
        return 130
    except OSError as error:  # a full or read-only disk, a missing folder: one line naming the path
        where = f" {error.filename}" if error.filename else ""
        print(f"error: cannot access{where}: {error.strerror or error}; check the path, its permissions and the free "
              "space", file=sys.stderr)
        return 2


def cmd_run(args: argparse.Namespace) -> int:
    from benchbackcompat.plugins import PluginHost
    from benchbackcompat.presets import resolve_run, split_list
    from benchbackcompat.report import leaderboard_tables
    from benchbackcompat.engine import distributed
    from benchbackcompat.run import execute, make_plan, rerun_methods, run_summary, select_shard, selected_cells

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
    host = PluginHost()
    plan = make_plan(run, host)
    plan.rerun = rerun_methods(plan, args.force, split_list(args.rerun))
    if args.shard:
        plan.cells = select_shard(plan.cells, args.shard)
    host.register_extensions()
    if args.dry_run:
        print(json.dumps(run.model_dump(mode="json"), indent=2))
        print(plan.describe())
        return 0
    started = time.perf_counter()
    if args.executor == "inline":
        records = execute(plan, host)
    else:
        from benchbackcompat.executors import submit

        records = submit(args, plan)
    # grids: the selected settings on the full protocol, as soon as their selection is recorded (not sharded: with
    # shards or jobs, the processes that find a selection complete run its cells, each cell once under its lock)
    finals, waiting = selected_cells(plan)
    if finals:
        records += execute(plan, host, finals) if args.executor == "inline" else submit(args, replace(plan, cells=finals))
    if not distributed.is_main():
        return 0
    print(leaderboard_tables(records))
    for line in waiting:
        print(f"grid {line}", file=sys.stderr)
    summary, code = run_summary(records, time.perf_counter() - started, run.out)
    print(summary, file=sys.stderr)
    return code


def cmd_list(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from benchbackcompat.plugins import PluginHost

    host = PluginHost()
    if args.what == "methods":
        host.load_all()
        rows = [[name, "available", cls.description] for name, cls in sorted(host.methods().items())]
        rows += [[name, "unavailable", failure.error] for name, failure in sorted(host.failures.items())]
        rows += [[name, "conflict", why] for name, why in sorted(host.conflicts.items())]
        print(tabulate(rows, headers=["method", "status", "description"], tablefmt="github"))
        for why in host.conflicts.values():
            print(f"error: {why}", file=sys.stderr)
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


def cmd_status(args: argparse.Namespace) -> int:
    from benchbackcompat.status import render_status

    print(render_status(args.results))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from benchbackcompat.report.curves import curve_summary
    from benchbackcompat.store import ResultStore

    store = ResultStore(args.results)
    records = list(store.records())
    if not args.cell:
        rows = [[r["key"], r["label"], r["status"]] for r in records]
        print(tabulate(rows, headers=["key", "cell", "status"], tablefmt="github") if rows else f"no results in {args.results}")
        return 0
    matches = [r for r in records if r["key"].startswith(args.cell) or r["label"] == args.cell]
    if len(matches) != 1:
        known = ", ".join(r["label"] for r in records) or "(none)"
        raise BenchError(f"{len(matches)} cells match {args.cell!r} in {args.results}; give a longer key or one of: {known}")
    record = matches[0]
    print(f"{record['label']}  key {record['key']}  status {record['status']}  device {record.get('device')}")
    if record["status"] != "finished":
        print(record.get("reason", ""))
        return 0
    for metric, matrix in record["matrices"].items():
        T = len(matrix)
        rows = [[f"q{t}", *(f"{matrix[t][k]:.2f}" if k <= t and matrix[t][k] is not None else "" for k in range(T))] for t in range(T)]
        print(f"\n{metric} (rows: query model t, columns: gallery model k)")
        print(tabulate(rows, headers=["", *(f"g{k}" for k in range(T))], tablefmt="github", disable_numparse=True))
        values = {k: v for k, v in record["metrics"][metric].items() if not isinstance(v, list)}
        print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()))
    print("\ntraining curves (per step: first -> last epoch, minimum)")
    print(curve_summary(record.get("curves", {})))
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from benchbackcompat.report import leaderboard_tables
    from benchbackcompat.report.merge import read_results
    from benchbackcompat.report.provenance import render_date
    from benchbackcompat.report.publish import command_line, write_leaderboard

    roots = args.results or [Path("results")]
    merged = read_results(roots)  # duplicate cells: see benchbackcompat/report/merge.py
    if not merged.records:
        raise BenchError(f"no results found in {', '.join(map(str, roots))}; run `benchbackcompat run` first")
    if args.out:
        written = write_leaderboard(merged, args.out, command_line(roots, args.out), render_date())
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


def cmd_validate(args: argparse.Namespace) -> int:
    from benchbackcompat.plugins import PluginHost
    from benchbackcompat.presets import load_preset, resolve_run, split_list
    from benchbackcompat.run import make_plan

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


COMMANDS = {"run": cmd_run, "list": cmd_list, "status": cmd_status, "show": cmd_show, "leaderboard": cmd_leaderboard, "validate": cmd_validate,
            "new-method": cmd_new_method}

if __name__ == "__main__":
    sys.exit(main())
