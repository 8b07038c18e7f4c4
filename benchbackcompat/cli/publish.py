"""``benchbackcompat leaderboard``: the tables of stored results, or the published folder."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbackcompat.errors import BenchError

if TYPE_CHECKING:
    from benchbackcompat.report.claims import PlannedScenario
    from benchbackcompat.report.methods import MethodInfo
    from benchbackcompat.report.provenance import Verification


def register(sub: Any) -> None:
    board = sub.add_parser("leaderboard", help="render the leaderboard from stored results (no training)")
    board.add_argument("--results", type=Path, action="append",
                       help="results directory (repeatable, merged; on a duplicate cell the first listed wins; default ./results); "
                            "its calibration/*.json (benchbackcompat calibrate --summary) go into the claims page")
    board.add_argument("--out", type=Path, help="write the leaderboard folder (Markdown pages, figures, CSV, JSON) instead of "
                                                "printing (plain text to a terminal, Markdown when redirected)")
    board.add_argument("--claims", type=Path, action="append", default=[], metavar="FILE",
                       help="a claims file (TOML, see docs/claims.md) whose claims are judged on these results "
                            "(repeatable): written to claims.md with --out, else their tally and summary are printed")
    board.add_argument("--grids", action="store_true", help="also print the whole grid of every method whose hyperparameters were selected")
    board.add_argument("--verified-only", action="store_true",
                       help="with --out, publish only the cells that this commit's code would compute again and that a "
                            "committed tree computed (the others are listed under 'Left out'); without it the page "
                            "headers name the cells that do not hold at this commit")
    board.set_defaults(handler=cmd_leaderboard)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from benchbackcompat.runtime.logs import log
    from benchbackcompat.report import leaderboard_tables
    from benchbackcompat.report.calibration import read_calibrations
    from benchbackcompat.report.merge import publishable, read_results
    from benchbackcompat.report.provenance import render_date
    from benchbackcompat.report.publish import command_line, write_leaderboard

    from benchbackcompat.report.claims import load_all

    roots = args.results or [Path("results")]
    claims = load_all(args.claims)  # a broken claims file stops before any reading or writing
    merged = read_results(roots)  # duplicate cells: see benchbackcompat/report/merge.py
    if not merged.records:
        raise BenchError(f"no results found in {', '.join(map(str, roots))}; run `benchbackcompat run` first")
    if args.out:
        for warning in publishable(merged, verification(merged.records), args.verified_only):
            log.warning(warning)
        written = write_leaderboard(merged, args.out, command_line(roots, args.out, args.verified_only, args.claims),
                                    render_date(), read_calibrations(roots),
                                    installed_methods({r.method for r in merged.records}), planned_scenarios, claims)
        print(f"wrote {len(written)} files to {args.out} ({args.out / 'README.md'})")
    else:
        print(leaderboard_tables(merged.records, grids=args.grids, plain=sys.stdout.isatty()))
        if claims:
            print(claims_summary(claims, merged.records, read_calibrations(roots), plain=sys.stdout.isatty()))
    if merged.superseded:
        print(f"{len(merged.superseded)} older records of the same cells (other method code, results version or data) "
              "left out; `benchbackcompat status` lists them as stale", file=sys.stderr)
    if merged.duplicates:
        print(f"{len(merged.duplicates)} duplicate cells counted once (the first --results directory wins, finished "
              f"records over unfinished ones)", file=sys.stderr)
    return 0


def claims_summary(claims: list, records: list, calibrations: list, plain: bool = False) -> str:
    """The claims' tally and one line per claim, in Markdown, or as plain text for a terminal (``plain``)."""
    from benchbackcompat.report.grouping import build_tables
    from benchbackcompat.report.claims.page import judge_files, summary_markdown, tally_markdown
    from benchbackcompat.report.markdown import unmarked

    judged = judge_files(claims, build_tables(records), calibrations)
    text = "\n\n" + tally_markdown(judged) + "\n\n" + summary_markdown(judged)
    return unmarked(text) if plain else text


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


def planned_scenarios(presets: set[str]) -> list[PlannedScenario]:
    """The scenarios the named presets define (the built-in or ``$BENCHBACKCOMPAT_PRESETS`` ones; a preset that is
    no longer there is skipped), each with its kind and dataset."""
    from benchbackcompat.execution.presets import available_presets, preset_scenarios
    from benchbackcompat.report.claims import PlannedScenario

    planned = []
    for preset in sorted(presets & set(available_presets())):
        try:
            scenarios = preset_scenarios(preset)
        except BenchError as error:  # a broken preset file must not stop the rendering of stored results
            logging.getLogger("benchbackcompat").warning(f"claims.md: untested scenarios of {preset!r} not listed: {error}")
            continue
        planned += [PlannedScenario(preset, s.name, s.config.kind, s.config.data.name, tuple(
            (name, getattr(s.config, name)) for name in ("protocol", "eval_split", "eval_classes", "metrics")
            if hasattr(s.config, name))) for s in scenarios]
    return planned
