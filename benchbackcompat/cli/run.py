"""``benchbackcompat run``: its options (one per run request field), the run and the terminal tables after it."""
from __future__ import annotations

import argparse
import json
import types
import typing
from pathlib import Path
from typing import Any

from benchbackcompat.cli.options import Parser, pairs, positive, seeds

WIDTH = 120  # the terminal width the table after `run` fits without --wide
RUN_EXAMPLES = """examples:
  benchbackcompat run --scenario ext-class --methods l2,hoc            quick preset, seed 0, results in ./results
  benchbackcompat run --scenario all --methods hbct --seeds 0-2        every scenario of the preset, three seeds
  benchbackcompat run --scenario both --methods my-method --smoke      a plugin end to end in seconds
  benchbackcompat run --scenario ext-class --methods l2 --set train.epochs=5 --set methods.l2.weight=3
  benchbackcompat run --scenario ext-class --methods l2 --dry-run      the plan and each cell's state, no training
  benchbackcompat run --scenario all --methods hoc --workers 2 --cell-timeout 3600"""


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="train, evaluate and print the leaderboard", epilog=RUN_EXAMPLES,
                         description="Train every method under every scenario for every seed (the cells), evaluate, "
                                     "store each cell's record and print the leaderboard. Finished cells are skipped; "
                                     "an interrupted cell resumes after its last saved step.",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run_options(run)
    run.add_argument("--wide", action="store_true",
                     help=f"print every column of the leaderboard (default: the primary ones, to fit {WIDTH} columns)")
    run.set_defaults(handler=command)


def request_parser(required: bool = True) -> argparse.ArgumentParser:
    """A parser of ``run``'s options alone (the run request's fields), e.g. for the run arguments that ``calibrate``
    takes after ``--`` (not ``required``: the request's required fields come from elsewhere)."""
    parser = Parser(prog="benchbackcompat run")
    run_options(parser, required)
    return parser


def run_options(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``run``'s options, one per :class:`~benchbackcompat.execution.request.RunRequest` field, with its help: the
    flag is the field's name (or the ``flag`` it declares), the argument type follows the field's type; the
    request's required fields are required options unless not ``required``."""
    from benchbackcompat.execution.request import RunRequest, flag_of

    for name, field in RunRequest.model_fields.items():
        extra, flag = field.json_schema_extra or {}, flag_of(name)
        kwargs: dict[str, Any] = {"dest": name, "help": field.description}
        if "metavar" in extra:
            kwargs["metavar"] = extra["metavar"]
        if field.annotation is bool:
            kwargs["action"] = "store_false" if field.default else "store_true"
        elif name in CONVERTERS:
            kwargs.update(action="append", default=[], type=CONVERTERS[name])
        else:
            kwargs.update(required=required and field.is_required(), default=None, **_argument_type(field))
        parser.add_argument(flag, **kwargs)


def _argument_type(field: Any) -> dict[str, Any]:
    """argparse's ``type`` or ``choices`` for a request field: positive numbers, paths, seeds, literals."""
    annotation, words = field.annotation, ()
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):  # X | None: X; X | Literal["auto"]: X or auto
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = next((a for a in kinds if typing.get_origin(a) is not typing.Literal), kinds[0])
        words = tuple(w for a in kinds if a is not annotation for w in typing.get_args(a))
    literal = typing.get_args(annotation) if typing.get_origin(annotation) is typing.Literal else ()
    is_positive = any(getattr(m, "gt", None) == 0 for m in (*field.metadata, *getattr(annotation, "__metadata__", ())))
    base = typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
    if literal:
        return {"choices": literal}
    if is_positive:
        return {"type": positive(base, words)}
    if base is Path:
        return {"type": Path}
    if typing.get_origin(base) is list and int in (item := typing.get_args(base)[0], *typing.get_args(item)[:1]):
        return {"type": seeds}  # list[int], its items maybe bounded (Annotated[int, ...])
    return {}


def _override(text: str) -> tuple[str, Any]:
    from benchbackcompat.overrides import parse_override

    return parse_override(text)


def _number(text: str) -> int | str:
    return int(text) if text.lstrip("-").isdigit() else text


def _executor_param(text: str) -> tuple[str, int | str]:
    key, value = pairs("--executor-param slurm_partition=gpu")(text)
    return key, _number(value)


_executor_param.__name__ = "KEY=VALUE"
CONVERTERS = {"overrides": _override, "grids": str, "executor_params": _executor_param}  # repeatable options


def run_request(args: argparse.Namespace, base: dict[str, Any] | None = None):
    """The :class:`~benchbackcompat.execution.request.RunRequest` of ``run``'s arguments (those given), over the
    fields ``base`` gives."""
    from benchbackcompat.config import validate_model
    from benchbackcompat.execution.presets import grid_options
    from benchbackcompat.execution.request import RunRequest

    fields = {**(base or {}),
              **{name: getattr(args, name) for name in RunRequest.model_fields if getattr(args, name) is not None}}
    fields["overrides"], fields["executor_params"] = dict(args.overrides), dict(args.executor_params)
    fields["grids"] = {option.split("=")[0]: values for option, _, _, values in grid_options(args.grids)}
    return validate_model(RunRequest, fields, "the run options")


def command(args: argparse.Namespace) -> int:
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

    from benchbackcompat.report.grouping import build_tables
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
    upgrades = {id(t): _upgrade_columns(t) for t in tables}
    if any(upgrades.values()):  # what an update breaks and what a live gallery sees, beside the ranking
        found = {id(t): u for t, u in zip(narrow, upgrades.values())}
        text = tables_markdown(narrow, plain=True, views=lambda t, notes: "\n\n".join(
            [table_markdown(t, notes, t.columns)] + ([table_markdown(t, notes, found[id(t)], ranked=False, cost=False)]
                                                     if found[id(t)] else [])))
    hidden = sum(len(t.columns) for t in tables) - sum(len(t.columns) + len(upgrades[id(w)])
                                                       for t, w in zip(narrow, tables))
    return text + (f"\n\n({hidden} more columns: run again with --wide, or run benchbackcompat leaderboard)" if hidden else "")


def _upgrade_columns(table) -> list:
    """The first metric's negative flip rate old self -> cross, then, where the records hold them, the first order's
    backfilling area and lowest point against the old self-test and each index's gap on the cross-tests: as many of
    them as fit ``WIDTH`` (nothing where the table has none of the live-gallery statistics)."""
    from benchbackcompat.report.markdown import widest_line
    from benchbackcompat.report.tables import Footnotes, table_markdown

    metric = table.columns[0].metric if table.columns else None
    by_key = {c.statistic.key: c for c in table.columns if c.metric == metric}
    order = next((key[4:] for key in by_key if key.startswith("auc_")), "")
    live = [by_key[key] for key in (f"auc_{order}", f"dip_{order}", "gap_cross_ivf-pq", "gap_cross_flat") if key in by_key]
    columns = ([by_key["nfr_cross"]] if "nfr_cross" in by_key else []) + live if live else []
    for dropped in ("gap_cross_flat", f"auc_{order}", "nfr_cross", "gap_cross_ivf-pq"):  # the least telling first
        if widest_line(table_markdown(table, Footnotes(plain=True), columns, ranked=False, cost=False)) <= WIDTH:
            break
        columns = [c for c in columns if c.statistic.key != dropped]
    return columns


def _with_gated_terms(table, columns: list) -> list:
    """``columns`` and, where a row's P_com is not shown (the update it divides by is too small), the terms of
    P_com = (cross − old self) / (ref self − old self) of the same metric: cross, old self and ref self."""
    from benchbackcompat.report.table_data import Missing

    gated = [c for c in columns if c.statistic.key == "p_com" and any(
        isinstance(cell := row.cells.get(c.id), Missing) and cell.text == "–" for row in table.rows)]
    terms = [c for metric in dict.fromkeys(c.metric for c in gated) for key in ("cross", "old_self", "reference_self")
             for c in table.columns if c.metric == metric and c.statistic.key == key]
    return columns + [c for c in terms if c not in columns]
