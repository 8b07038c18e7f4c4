"""The benchbackcompat command: run a benchmark, list what is installed, inspect and publish results."""
from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.interrupts import Terminated

if TYPE_CHECKING:
    from benchbackcompat.report.methods import MethodInfo
    from benchbackcompat.report.provenance import Verification

LISTABLE = ("methods", "scenarios", "datasets", "backbones", "presets")
STATUS_ROWS = 40  # cells `status` lists without --all
WIDTH = 120  # the terminal width the table after `run` fits without --wide
RUN_EXAMPLES = """examples:
  benchbackcompat run --scenario ext-class --methods l2,hoc            quick preset, seed 0, results in ./results
  benchbackcompat run --scenario all --methods hbct --seeds 0-2        every scenario of the preset, three seeds
  benchbackcompat run --scenario both --methods my-method --smoke      a plugin end to end in seconds
  benchbackcompat run --scenario ext-class --methods l2 --set train.epochs=5 --set methods.l2.weight=3
  benchbackcompat run --scenario ext-class --methods l2 --dry-run      the plan and each cell's state, no training
  benchbackcompat run --scenario all --methods hoc --workers 2 --cell-timeout 3600"""


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (the usage stays in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def _seeds(text: str) -> list[int]:
    from benchbackcompat.execution.request import parse_seeds

    try:
        return parse_seeds(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a positive {'integer' if kind is int else 'number'}")
        return value
    parse.__name__ = f"positive {kind.__name__}"
    return parse


def _pairs(option: str) -> Any:
    """``KEY=VALUE`` -> (KEY, VALUE)."""
    def parse(text: str) -> tuple[str, str]:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE, e.g. {option}")
        return key.strip(), value
    parse.__name__ = "KEY=VALUE"
    return parse


def _logging_options(parser: argparse.ArgumentParser, defaults: dict[str, Any]) -> None:
    parser.add_argument("-v", "--verbose", action="count", default=defaults["verbose"], help="more log lines (debug)")
    parser.add_argument("-q", "--quiet", action="store_true", default=defaults["quiet"], help="warnings and errors only")
    parser.add_argument("--log-file", type=Path, default=defaults["log_file"],
                        help="also write the log to this file (with time stamps)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=defaults["progress"],
                        help="progress bars (default: only when stderr is a terminal)")


def _filters(command: argparse.ArgumentParser) -> None:
    command.add_argument("--scenario", default="", metavar="NAME[,NAME]", help="only these scenarios (comma-separated)")
    command.add_argument("--methods", default="", metavar="NAME[,NAME]", help="only these methods (comma-separated)")


def build_parser() -> argparse.ArgumentParser:
    from benchbackcompat.version import __version__

    parser = Parser(prog="benchbackcompat", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _logging_options(parser, {"verbose": 0, "quiet": False, "log_file": None, "progress": None})
    logging_options = Parser(add_help=False)  # after the command too; given there, they win
    _logging_options(logging_options, dict.fromkeys(("verbose", "quiet", "log_file", "progress"), argparse.SUPPRESS))
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    sub.add_parser = functools.partial(sub.add_parser, parents=[logging_options])  # every command takes them

    run = sub.add_parser("run", help="train, evaluate and print the leaderboard", epilog=RUN_EXAMPLES,
                         description="Train every method under every scenario for every seed (the cells), evaluate, "
                                     "store each cell's record and print the leaderboard. Finished cells are skipped; "
                                     "an interrupted cell resumes after its last saved step.",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run_options(run)
    run.add_argument("--wide", action="store_true",
                     help=f"print every column of the leaderboard (default: the primary ones, to fit {WIDTH} columns)")

    listing = sub.add_parser("list", help="list what is available")
    listing.add_argument("what", choices=LISTABLE, help="what to list")
    listing.add_argument("--preset", default="quick", help="preset whose scenarios `list scenarios` shows (default: quick)")
    listing.add_argument("--params", action="store_true", help="with `list methods`: every method's hyperparameters")

    describe = sub.add_parser("describe", help="a method's hyperparameters (type, default, range), scenarios and paper")
    describe.add_argument("method", help="method name (see `list methods`)")
    describe.add_argument("--preset", default="quick", help="preset whose scenarios are checked for support")

    status = sub.add_parser("status", help="list finished, partial, pending, failed and stale cells of a results directory")
    status.add_argument("--results", type=Path, default=Path("results"), help="results directory (default ./results)")
    _filters(status)
    status.add_argument("--all", action="store_true", help=f"list every cell (default: the first {STATUS_ROWS}, those "
                                                           "that need a run first)")

    show = sub.add_parser("show", help="print a cell's compatibility matrix and metrics")
    show.add_argument("cell", nargs="?", help="cell key (a prefix is enough) or label scenario/method/seedN; omit to list cells")
    show.add_argument("--results", type=Path, default=Path("results"), help="results directory (default ./results)")

    compare = sub.add_parser("compare", help="two results directories side by side: differences per method and scenario")
    compare.add_argument("a", type=Path, help="results directory A")
    compare.add_argument("b", type=Path, help="results directory B")
    compare.add_argument("--statistics", default="AC,AA,ACA,old_self,self,cross,p_com,p_up",
                         help="comma-separated statistics to compare (default: %(default)s)")
    _filters(compare)

    export = sub.add_parser("export", help="results as a table file (.csv or .parquet) plus a table of matrix entries")
    export.add_argument("out", type=Path, help="file to write, e.g. results.parquet (the matrix entries go to NAME-matrix.parquet)")
    export.add_argument("--results", type=Path, action="append", help="results directory (repeatable; default ./results)")

    board = sub.add_parser("leaderboard", help="render the leaderboard from stored results (no training)")
    board.add_argument("--results", type=Path, action="append",
                       help="results directory (repeatable, merged; on a duplicate cell the first listed wins; default ./results); "
                            "its calibration/*.json (benchbackcompat calibrate --summary) go into the claims report")
    board.add_argument("--out", type=Path, help="write the leaderboard folder (Markdown pages, figures, CSV, JSON) instead of "
                                                "printing (plain text to a terminal, Markdown when redirected)")
    board.add_argument("--grids", action="store_true", help="also print the whole grid of every method whose hyperparameters were selected")
    board.add_argument("--verified-only", action="store_true",
                       help="with --out, publish only the cells that this commit's code would compute again and that a "
                            "committed tree computed (the others are listed under 'Left out'); without it the page "
                            "headers name the cells that do not hold at this commit")

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
                             "folder's calibration/*.json go into the claims report)")
    calibration.add_argument("run_args", nargs="*", metavar="-- RUN-ARGS", help="more `run` arguments for both runs")

    validate = sub.add_parser("validate", help="validate a preset and method hyperparameters without running")
    validate.add_argument("--preset", default="quick", help="preset name or TOML file (default: quick)")
    validate.add_argument("--methods", default="", help="comma-separated methods to validate too")

    new_method = sub.add_parser("new-method", help="create an installable method plugin package (see docs/writing-a-method.md)")
    new_method.add_argument("name", help="method name: lower-case letters, digits and hyphens, e.g. my-method")
    new_method.add_argument("--dir", type=Path, help="folder to create (default ./bbc-NAME)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        from benchbackcompat.runtime import logs
        from benchbackcompat.runtime.interrupts import watching

        logs.configure(-1 if args.quiet else args.verbose, args.log_file, args.progress)
        with watching():  # a real Ctrl-C stops the run; a KeyboardInterrupt raised by plugin code fails its cell
            return COMMANDS[args.command](args)
    except BenchError as error:
        logging.getLogger("benchbackcompat").error(str(error))
        return 2
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or SIGTERM where a run stops its workers first (Terminated)
        stopped = "stopped by SIGTERM" if isinstance(interrupt, Terminated) else "interrupted"
        logging.getLogger("benchbackcompat").error(f"{stopped}: finished steps are saved; run the same command again to resume")
        return 143 if isinstance(interrupt, Terminated) else 130
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as Unix tools do
        _silence_stdout()
        return 0
    except OSError as error:  # a full or read-only disk, a missing folder: one line naming the path
        where = f" {error.filename}" if error.filename else ""
        print(f"error: cannot access{where}: {error.strerror or error}; check the path, its permissions and the free "
              "space", file=sys.stderr)
        return 2


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush of a closed pipe raises nothing."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file (captured): nothing to flush
        pass


def run_options(parser: argparse.ArgumentParser) -> None:
    """``run``'s options, one per :class:`~benchbackcompat.execution.request.RunRequest` field, with its help: the
    flag is the field's name (or the ``flag`` it declares), the argument type follows the field's type."""
    from benchbackcompat.execution.request import RunRequest

    for name, field in RunRequest.model_fields.items():
        extra = field.json_schema_extra or {}
        flag = extra.get("flag", "--" + name.replace("_", "-"))
        kwargs: dict[str, Any] = {"dest": name, "help": field.description}
        if "metavar" in extra:
            kwargs["metavar"] = extra["metavar"]
        if field.annotation is bool:
            kwargs["action"] = "store_false" if field.default else "store_true"
        elif name in CONVERTERS:
            kwargs.update(action="append", default=[], type=CONVERTERS[name])
        else:
            kwargs.update(required=field.is_required(), default=None, **_argument_type(field))
        parser.add_argument(flag, **kwargs)


def _argument_type(field: Any) -> dict[str, Any]:
    """argparse's ``type`` or ``choices`` for a request field: positive numbers, paths, seeds, literals."""
    annotation = field.annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):  # X | None: X
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    literal = typing.get_args(annotation) if typing.get_origin(annotation) is typing.Literal else ()
    positive = any(getattr(m, "gt", None) == 0 for m in (*field.metadata, *getattr(annotation, "__metadata__", ())))
    base = typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
    if literal:
        return {"choices": literal}
    if positive:
        return {"type": _positive(base)}
    if base is Path:
        return {"type": Path}
    if base == list[int]:
        return {"type": _seeds}
    return {}


def _override(text: str) -> tuple[str, Any]:
    from benchbackcompat.execution.presets import parse_override

    return parse_override(text)


def _number(text: str) -> int | str:
    return int(text) if text.lstrip("-").isdigit() else text


def _executor_param(text: str) -> tuple[str, int | str]:
    key, value = _pairs("--executor-param slurm_partition=gpu")(text)
    return key, _number(value)


_executor_param.__name__ = "KEY=VALUE"
CONVERTERS = {"overrides": _override, "grids": str, "executor_params": _executor_param}  # repeatable options


def run_request(args: argparse.Namespace):
    """The :class:`~benchbackcompat.execution.request.RunRequest` of ``run``'s arguments (those given)."""
    from benchbackcompat.config import validate_model
    from benchbackcompat.execution.presets import grid_options
    from benchbackcompat.execution.request import RunRequest

    fields = {name: getattr(args, name) for name in RunRequest.model_fields if getattr(args, name) is not None}
    fields["overrides"], fields["executor_params"] = dict(args.overrides), dict(args.executor_params)
    fields["grids"] = {option.split("=")[0]: values for option, _, _, values in grid_options(args.grids)}
    return validate_model(RunRequest, fields, "the run options")


def cmd_run(args: argparse.Namespace) -> int:
    from benchbackcompat.runtime.logs import log
    from benchbackcompat.execution.runner import run

    outcome = run(run_request(args))
    if args.dry_run:
        print_dry_run(outcome.plan)
        return 0
    if outcome.records:
        print(terminal_tables(outcome.records, args.wide))
    if outcome.summary:
        (log.warning if outcome.code else log.info)(outcome.summary)  # failed or diverged cells stay visible under -q
    return outcome.code


def print_dry_run(plan) -> None:
    """The resolved configuration, the planned steps and each cell's state in the results directory (the data is
    loaded, so a bad data root fails here)."""
    from benchbackcompat.engine.device import resolve_device
    from benchbackcompat.execution.plan import assign_fingerprints
    from benchbackcompat.store import ResultStore

    run = plan.run
    resolved = {name: method.params.model_dump(mode="json") for name, method in plan.methods.items()}
    print(json.dumps({**run.model_dump(mode="json"), "method_params": resolved}, indent=2))
    print(plan.describe())
    assign_fingerprints(plan, resolve_device(run.device))
    store = ResultStore(run.out)
    by_label: dict[str, list] = {}  # the records of each label (under any key)
    for record in store.records():
        by_label.setdefault(record.label, []).append(record)
    print(f"cell states in {run.out} (done, partial, stale: recorded by other code or data, pending):")
    for cell in plan.cells:
        record = store.record(cell.key)
        saved = list(store.cell_dir(cell.key).glob("step-*.pt"))
        config = cell.scenario.config.model_dump(mode="json")
        if record is not None:
            state = f"done ({record.status})"
        elif saved:
            state = f"partial ({len(saved)} steps saved)"
        elif any(r.config == config and r.params == cell.params for r in by_label.get(cell.label, [])):
            state = "stale (recomputed under a new key)"
        else:
            state = "pending"
        print(f"  {cell.label} (key {cell.key}): {state}")


def terminal_tables(records, wide: bool = False) -> str:
    """The leaderboard after a run, as plain text: every column with ``wide``, else the primary statistics of the
    first metric (the kind's ranking: primary and tie-breaker, or the primary alone where both do not fit
    ``WIDTH``), and where some row's P_com is not shown, the cross- and self-tests it would have divided."""
    from dataclasses import replace

    from benchbackcompat.report.aggregate import build_tables
    from benchbackcompat.report.markdown import widest_line
    from benchbackcompat.report.tables import ranking_columns, table_markdown, tables_markdown

    tables = build_tables(records)
    if wide:
        return tables_markdown(tables, plain=True)
    text = ""
    for keep in (2, 1):
        narrow = [replace(t, columns=_with_gated_terms(t, ranking_columns(t, keep))) for t in tables]
        text = tables_markdown(narrow, plain=True, views=lambda t, notes: table_markdown(t, notes, t.columns))
        if widest_line(text) <= WIDTH:
            break
    hidden = sum(len(t.columns) for t in tables) - sum(len(t.columns) for t in narrow)
    return text + (f"\n\n({hidden} more columns: run again with --wide, or run benchbackcompat leaderboard)" if hidden else "")


def _with_gated_terms(table, columns: list) -> list:
    """``columns`` and, where a row's P_com is not shown (the update it divides by is too small), the terms of
    P_com = (cross − old self) / (ref self − old self) of the same metric: cross, old self and ref self."""
    from benchbackcompat.report.aggregate import Missing

    gated = [c for c in columns if c.statistic.key == "p_com" and any(
        isinstance(cell := row.cells.get(c.id), Missing) and cell.text == "–" for row in table.rows)]
    terms = [c for metric in dict.fromkeys(c.metric for c in gated) for key in ("cross", "old_self", "reference_self")
             for c in table.columns if c.metric == metric and c.statistic.key == key]
    return columns + [c for c in terms if c not in columns]


def cmd_list(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from benchbackcompat.runtime.logs import log

    if args.what == "methods":  # importing the plugins imports torch: their table is kept between calls
        from benchbackcompat.cli.answer_cache import cached_answer, default_cache_dir

        conflicts: list[str] = []

        def methods_table() -> tuple[str, bool]:
            from benchbackcompat.execution.plugin_host import PluginHost

            host = PluginHost()
            host.load_all()
            rows = [[name, "available", cls.description] for name, cls in sorted(host.methods().items())]
            rows += [[name, "unavailable", failure.error] for name, failure in sorted(host.failures.items())]
            rows += [[name, "conflict", why] for name, why in sorted(host.conflicts.items())]
            if args.params:
                from benchbackcompat.report.describe import parameter_rows

                rows = [[name, status, "; ".join(f"{p['name']}={p['default']}" for p in parameter_rows(host.methods()[name].Params))
                         if status == "available" else text] for name, status, text in rows]
            conflicts.extend(host.conflicts.values())
            table = tabulate(rows, headers=["method", "status", "hyperparameters (defaults; `describe METHOD` for more)"
                                            if args.params else "description"], tablefmt="github")
            return table, not (host.failures or host.conflicts)  # a broken plugin is asked again next time

        print(cached_answer(default_cache_dir(), ["list", "methods", str(args.params)], methods_table))
        for why in conflicts:
            log.error(why)
        if conflicts:
            return 2
    elif args.what == "scenarios":
        from benchbackcompat.execution.presets import load_preset

        preset = load_preset(args.preset)
        rows = [[name, table.get("kind", "?"), table.get("description", "")] for name, table in preset["scenarios"].items()]
        print(tabulate(rows, headers=["scenario", "kind", f"description (preset {args.preset})"], tablefmt="github"))
    elif args.what == "presets":
        from benchbackcompat.execution.presets import available_presets, load_preset

        rows = [[name, str(path), load_preset(name).get("description", "")] for name, path in available_presets().items()]
        print(tabulate(rows, headers=["preset", "file", "description"], tablefmt="github"))
    else:
        from benchbackcompat.execution.plugin_host import PluginHost

        host = PluginHost()
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
    from benchbackcompat.cli.answer_cache import cached_answer, default_cache_dir
    from benchbackcompat.execution.presets import preset_path

    def description() -> tuple[str, bool]:  # importing the plugins imports torch: the answer is kept between calls
        from benchbackcompat.report.describe import describe_method
        from benchbackcompat.execution.plugin_host import PluginHost
        from benchbackcompat.execution.presets import load_preset, resolve_run

        method = PluginHost().method_class(args.method)
        scenarios = resolve_run(preset=args.preset, scenarios=list(load_preset(args.preset)["scenarios"]),
                                methods=[args.method]).scenarios
        return describe_method(args.method, method, scenarios, args.preset), True

    preset = Path(str(preset_path(args.preset)))
    print(cached_answer(default_cache_dir(), ["describe", args.method, args.preset], description, inputs=[preset]))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from benchbackcompat.results.status import render_status

    from benchbackcompat.execution.request import split_list

    print(render_status(args.results, scenarios=tuple(split_list(args.scenario)),
                        methods=tuple(split_list(args.methods)), limit=None if args.all else STATUS_ROWS))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from benchbackcompat.store import ResultStore
    from benchbackcompat.record import FinishedRecord
    from benchbackcompat.results.flips import flip_lines

    if not (args.results / "cells").is_dir():
        raise BenchError(f"no results in {args.results}; pass the results directory of a run with --results DIR")
    store = ResultStore(args.results)
    records = list(store.records())
    saved = {key: ", ".join(map(str, steps)) for key, steps in store.partial_cells().items()}
    partial = {key: (store.cell_entry(key) or {}).get("label", "(label not recorded)") for key in saved}
    variant = _variants(records)
    if not args.cell:
        rows = [[r.key, r.label, variant[r.key], _record_state(r)] for r in records]
        rows += [[key, label, "", f"partial (steps {saved[key]} saved)"] for key, label in partial.items()]
        print(tabulate(rows, headers=["key", "cell", "variant", "status"], tablefmt="github") if rows
              else f"no results in {args.results}")
        return 0
    found = [r for r in records if r.key.startswith(args.cell) or r.label == args.cell]
    pending = [key for key, label in partial.items() if key.startswith(args.cell) or label == args.cell]
    if not found and len(pending) == 1:
        print(f"{partial[pending[0]]}  key {pending[0]}  status partial  device unknown")
        print(f"steps {saved[pending[0]]} saved; run the same command again to resume")
        return 0
    states = {r.key: _record_state(r) for r in found}
    current = sorted((r for r in found if states[r.key] == r.status), key=lambda r: r.computed_at or "")
    if not found or (len(found) + len(pending) > 1 and (len({r.label for r in found}) > 1 or not current)):
        rows = [[r.key, r.label, variant[r.key], states[r.key]] for r in found]
        rows += [[key, partial[key], "", f"partial (steps {saved[key]} saved)"] for key in pending]
        listing = "\n" + tabulate(rows, headers=["key", "cell", "variant", "state"], tablefmt="github") if rows else ""
        raise BenchError(f"{len(rows)} cells match {args.cell!r} in {args.results}; give a longer key or a label "
                         f"(`benchbackcompat show --results {args.results}` lists them){listing}")
    record = current[-1] if current else found[0]
    others = [r for r in found if r is not record]
    print(f"{record.label}  key {record.key}  variant {variant[record.key]}  status {states[record.key]}  "
          f"device {record.device or 'unknown'}")
    if others:
        print(f"({len(others)} other records of this label: " + ", ".join(
            f"{r.key} {variant[r.key]} {states[r.key]}" for r in others) + "; shown: the newest current one, "
            f"variant {variant[record.key]})")
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
        print("\n".join(flip_lines(record, metric)) or "  flips: not defined (average precisions) or no per-query outcomes")
    from benchbackcompat.report.curves import curve_summary

    print("\ntraining curves (per step: first -> last epoch, minimum)")
    print(curve_summary(store.curves(record.key)))
    return 0


def _variants(records: list) -> dict[str, str]:
    """Each record's variant as ``load_results`` and the leaderboard name it ("-" for the only configuration of
    its scenario and method), with its configuration hash: ``train.epochs=3 (config 1a2b3c4d)``."""
    from benchbackcompat.report.aggregate import configuration_labels

    return {r.key: f"{label or '-'} (config {digest[:8]})" for r, (label, digest) in zip(records, configuration_labels(records))}


@functools.cache
def _host():
    from benchbackcompat.execution.plugin_host import PluginHost

    return PluginHost()


_IDENTITIES: dict[str, Any] = {}  # method -> its installed code identity (status.staleness fills it)


def _record_state(record) -> str:
    """A record's status, or ``stale (why)`` when other code computed it (status.staleness)."""
    from benchbackcompat.results.status import staleness

    why = staleness(record, _IDENTITIES, _host())
    return f"stale ({why})" if why else record.status


def cmd_compare(args: argparse.Namespace) -> int:
    from benchbackcompat.results.compare import compare_results, render
    from benchbackcompat.execution.request import split_list

    table, notes = compare_results(args.a, args.b, tuple(split_list(args.statistics)),
                                   scenarios=tuple(split_list(args.scenario)), methods=tuple(split_list(args.methods)))
    print(render(table, notes, str(args.a), str(args.b)))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from benchbackcompat.results.frames import export_results

    written = export_results(args.results or [Path("results")], args.out)
    print("wrote " + " and ".join(str(path) for path in written))
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from benchbackcompat.runtime.logs import log
    from benchbackcompat.report import leaderboard_tables
    from benchbackcompat.report.calibration import read_calibrations
    from benchbackcompat.report.merge import read_results
    from benchbackcompat.report.provenance import Verification, render_date
    from benchbackcompat.report.publish import command_line, write_leaderboard

    roots = args.results or [Path("results")]
    merged = read_results(roots)  # duplicate cells: see benchbackcompat/report/merge.py
    if not merged.records:
        raise BenchError(f"no results found in {', '.join(map(str, roots))}; run `benchbackcompat run` first")
    if args.out:
        check = verification(merged.records)
        unverified = {r.key: why for r in merged.records
                      if (why := ("computed from an uncommitted tree" if "+dirty" in str(r.versions.commit) else "")
                          or check.stale.get(r.key))}
        if args.verified_only and (check.commit is None or "+dirty" in check.commit):
            log.warning(f"rendering from an uncommitted tree ({check.commit or 'no commit'}): publish from a clean "
                        "commit, so that the pages name the code that verified them")
        if unverified and args.verified_only:
            merged.left_out = [(r, unverified[r.key]) for r in merged.records if r.key in unverified]
            merged.records = [r for r in merged.records if r.key not in unverified]
            log.warning(f"{len(unverified)} cells left out (computed by other code or from an uncommitted tree; "
                        "`benchbackcompat status` lists them)")
            if not merged.records:
                raise BenchError("every stored cell was computed by other code than this commit's or from an "
                                 "uncommitted tree; run them again, or publish without --verified-only")
        merged.verification = Verification(check.commit, {} if merged.left_out else unverified)
        written = write_leaderboard(merged, args.out, command_line(roots, args.out, args.verified_only), render_date(),
                                    read_calibrations(roots), installed_methods({r.method for r in merged.records}))
        print(f"wrote {len(written)} files to {args.out} ({args.out / 'README.md'})")
    else:
        print(leaderboard_tables(merged.records, grids=args.grids, plain=sys.stdout.isatty()))
    if merged.superseded:
        print(f"{len(merged.superseded)} older records of the same cells (other method code, results version or data) "
              "left out; `benchbackcompat status` lists them as stale", file=sys.stderr)
    if merged.duplicates:
        print(f"{len(merged.duplicates)} duplicate cells counted once (the first --results directory wins, finished "
              f"records over unfinished ones)", file=sys.stderr)
    return 0


def verification(records: list) -> Verification:
    """The commit rendering the pages and the records its code would not compute again (``status``'s staleness)."""
    from benchbackcompat.execution.plugin_host import PluginHost
    from benchbackcompat.results.status import staleness
    from benchbackcompat.store.provenance import project_commit

    host, current = PluginHost(), {}
    from benchbackcompat.report.provenance import Verification

    stale = {record.key: why for record in records if (why := staleness(record, current, host))}
    return Verification(project_commit(), stale)


def installed_methods(names: set[str]) -> dict[str, MethodInfo]:
    """What the installed plugins declare about the methods ``names`` (``report.methods.MethodInfo``), for their
    leaderboard pages; a method whose plugin is missing or broken is left out (its page says so)."""
    from benchbackcompat.execution.plugin_host import PluginHost
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
    from benchbackcompat.execution.plugin_host import PluginHost
    from benchbackcompat.execution.presets import load_preset, resolve_run
    from benchbackcompat.execution.plan import make_plan
    from benchbackcompat.execution.request import split_list

    scenarios = list(load_preset(args.preset)["scenarios"])
    methods = split_list(args.methods) or ["independent"]
    make_plan(resolve_run(preset=args.preset, scenarios=scenarios, methods=methods), PluginHost())
    print(f"preset {args.preset!r}: {len(scenarios)} scenarios valid; methods valid: {', '.join(methods)}")
    return 0


def cmd_new_method(args: argparse.Namespace) -> int:
    from benchbackcompat.cli.scaffold import create_plugin

    files = create_plugin(args.name, args.dir)
    root = files[0].parent
    print(f"created the plugin package of method {args.name!r} in {root}:")
    print("\n".join(f"  {path}" for path in files))
    print(f"next: pip install -e {root} && benchbackcompat list methods && python -m pytest {root / 'tests'}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from benchbackcompat.results.calibrate import CalibrationOptions, calibrate
    from benchbackcompat.execution.runner import run

    run_args = tuple(a for a in args.run_args if a != "--")
    given = ["run", "--preset", args.preset, "--scenario", args.scenario, "--methods", args.methods, "--seeds",
             args.seeds, *run_args]  # the calibrate options and the run arguments typed after `--`, as one run
    options = CalibrationOptions(preset=args.preset, scenario=args.scenario, methods=args.methods, seeds=args.seeds,
                                 out=args.out, factor=args.factor, metric=args.metric, tolerance=args.tolerance,
                                 min_gain=args.min_gain, base=args.base, summary=args.summary, run_args=run_args,
                                 request=run_request(build_parser().parse_args(given)))
    result = calibrate(options, lambda request: run(request).records)
    print(result.text)
    return 0


COMMANDS = {"run": cmd_run, "list": cmd_list, "describe": cmd_describe, "status": cmd_status, "show": cmd_show,
            "compare": cmd_compare, "export": cmd_export, "leaderboard": cmd_leaderboard, "validate": cmd_validate,
            "new-method": cmd_new_method, "calibrate": cmd_calibrate}
