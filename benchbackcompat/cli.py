"""Command line: ``benchbackcompat run | list | show | leaderboard | validate``."""
from __future__ import annotations

import argparse
import json
import sys
import time
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
    run.add_argument("--dry-run", action="store_true", help="print the resolved configuration and the planned steps")

    listing = sub.add_parser("list", help="list what is available")
    listing.add_argument("what", choices=LISTABLE)
    listing.add_argument("--preset", default="quick")

    show = sub.add_parser("show", help="print a cell's compatibility matrix and metrics")
    show.add_argument("cell", nargs="?", help="cell key (a prefix is enough) or label scenario/method/seedN; omit to list cells")
    show.add_argument("--results", type=Path, default=Path("results"))

    board = sub.add_parser("leaderboard", help="render the leaderboard from stored results (no training)")
    board.add_argument("--results", type=Path, action="append", help="results directory (repeatable; default ./results)")
    board.add_argument("--out", type=Path, help="write leaderboard.md into this folder instead of printing")

    validate = sub.add_parser("validate", help="validate a preset and method hyperparameters without running")
    validate.add_argument("--preset", default="quick")
    validate.add_argument("--methods", default="", help="comma-separated methods to validate too")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished steps are saved; run the same command again to resume", file=sys.stderr)
        return 130


def cmd_run(args: argparse.Namespace) -> int:
    from benchbackcompat.plugins import PluginHost
    from benchbackcompat.presets import resolve_run, split_list
    from benchbackcompat.report import leaderboard_tables
    from benchbackcompat.run import execute, make_plan

    data: dict = {}
    if args.dataset:
        data["name"] = args.dataset
    if args.data_root:
        data["root"] = str(args.data_root)
    run = resolve_run(
        preset=args.preset, scenarios=split_list(args.scenario), methods=split_list(args.methods), seeds=args.seeds,
        scenario_overrides={"data": data} if data else None, assignments=args.assignments, out=args.out,
        device=args.device,
    )
    host = PluginHost()
    plan = make_plan(run, host)
    host.register_extensions()
    if args.dry_run:
        print(json.dumps(run.model_dump(mode="json"), indent=2))
        print(plan.describe())
        return 0
    started = time.perf_counter()
    records = execute(plan, host)
    print(leaderboard_tables(records))
    failed = [r for r in records if r["status"] == "failed"]
    print(f"\n{len(records)} cells in {time.perf_counter() - started:.1f} s; results in {run.out}", file=sys.stderr)
    for record in records:
        if record["status"] not in ("finished",):
            print(f"  {record['label']}: {record['status']} ({record.get('reason', '')})", file=sys.stderr)
    return 1 if failed else 0


def cmd_list(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from benchbackcompat.plugins import PluginHost

    host = PluginHost()
    if args.what == "methods":
        host.load_all()
        rows = [[name, "available", cls.description] for name, cls in sorted(host.methods().items())]
        rows += [[name, "unavailable", failure.error] for name, failure in sorted(host.failures.items())]
        print(tabulate(rows, headers=["method", "status", "description"], tablefmt="github"))
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


def cmd_show(args: argparse.Namespace) -> int:
    from tabulate import tabulate

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
    for step, curve in record.get("curves", {}).items():
        if curve:
            print(f"step {step}: loss {curve[0]['loss']:.3f} -> {curve[-1]['loss']:.3f} over {len(curve)} epochs")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from benchbackcompat.engine.checkpoint import atomic_write_bytes
    from benchbackcompat.report import leaderboard_tables
    from benchbackcompat.store import ResultStore

    records: dict[str, dict] = {}
    for root in args.results or [Path("results")]:
        for record in ResultStore(root).records():
            records.setdefault(record["key"], record)  # the same cell from two directories counts once
    if not records:
        raise BenchError(f"no results found in {', '.join(map(str, args.results or ['results']))}; run `benchbackcompat run` first")
    text = leaderboard_tables(records.values())
    if args.out:
        atomic_write_bytes(args.out / "leaderboard.md", (text + "\n").encode())
        print(f"wrote {args.out / 'leaderboard.md'}")
    else:
        print(text)
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


COMMANDS = {"run": cmd_run, "list": cmd_list, "show": cmd_show, "leaderboard": cmd_leaderboard, "validate": cmd_validate}

if __name__ == "__main__":
    sys.exit(main())
