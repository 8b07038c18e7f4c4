"""Stored results from the command line: ``status``, ``show``, ``compare`` and ``export``."""
from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbackcompat.cli.options import filters
from benchbackcompat.errors import BenchError

STATUS_ROWS = 40  # cells `status` lists without --all


def register(sub: Any) -> None:
    status = sub.add_parser("status", help="list finished, partial, pending, failed and stale cells of a results directory")
    status.add_argument("--results", type=Path, default=Path("results"), help="results directory (default ./results)")
    filters(status)
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
    filters(compare)
    export = sub.add_parser("export", help="results as a table file (.csv or .parquet) plus a table of matrix entries")
    export.add_argument("out", type=Path, help="file to write, e.g. results.parquet (the matrix entries go to NAME-matrix.parquet)")
    export.add_argument("--results", type=Path, action="append", help="results directory (repeatable; default ./results)")
    status.set_defaults(handler=cmd_status)
    show.set_defaults(handler=cmd_show)
    compare.set_defaults(handler=cmd_compare)
    export.set_defaults(handler=cmd_export)


def echo(text: object) -> None:
    """Print text that quotes records: never obeyed by the terminal (``runtime.terminal``)."""
    from benchbackcompat.runtime.terminal import printable

    print(printable(text, lines=True))


def cmd_status(args: argparse.Namespace) -> int:
    from benchbackcompat.results.status import render_status

    from benchbackcompat.execution.request import split_list

    from benchbackcompat.store.packing import results_folder

    with results_folder(args.results) as folder:
        print(render_status(folder, scenarios=tuple(split_list(args.scenario)),
                            methods=tuple(split_list(args.methods)), limit=None if args.all else STATUS_ROWS))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from benchbackcompat.store.packing import results_folder

    with results_folder(args.results) as folder:
        return _show(args, folder)


def _show(args: argparse.Namespace, folder: Path) -> int:
    """``show`` on the results folder ``folder`` (``args.results`` itself, or the packed store unpacked)."""
    from benchbackcompat.store import ResultStore

    store = ResultStore(folder)
    cells = StoredCells.of(store)
    if not args.cell:
        echo(cells.listing() or f"no results in {args.results}")
        return 0
    found = [r for r in cells.records if r.key.startswith(args.cell) or r.label == args.cell]
    pending = [key for key, label in cells.partial.items() if key.startswith(args.cell) or label == args.cell]
    if not found and len(pending) == 1:
        echo(f"{cells.partial[pending[0]]}  key {pending[0]}  status partial  device unknown")
        echo(f"steps {cells.saved[pending[0]]} saved; run the same command again to resume")
        return 0
    record, others = cells.pick(found, pending, args.cell, args.results)
    print_record(store, record, others, cells)
    return 0


@dataclass
class StoredCells:
    """A results folder's records and partial cells, each record's variant label and state (stale or its status)."""

    records: list
    saved: dict[str, str]  # key of a partial cell -> its saved steps
    partial: dict[str, str]  # key of a partial cell -> its label
    variant: dict[str, str]
    states: dict[str, str] = field(default_factory=dict)  # filled as records are shown (staleness is not free)

    @functools.cached_property
    def gates(self) -> dict[tuple[str, str, str], str]:
        """(key, metric, statistic) -> why the leaderboard does not show that number (``frames.statistic_gates``)."""
        from benchbackcompat.results.frames import statistic_gates

        return statistic_gates(self.records)

    def state(self, record) -> str:
        """The record's status, or ``stale (why)``; worked out once per record."""
        if record.key not in self.states:
            self.states[record.key] = _record_state(record)
        return self.states[record.key]

    @classmethod
    def of(cls, store) -> StoredCells:
        records = list(store.records())
        saved = {key: ", ".join(map(str, steps)) for key, steps in store.partial_cells().items()}
        partial = {key: (store.cell_entry(key) or {}).get("label", "(label not recorded)") for key in saved}
        return cls(records, saved, partial, _variants(records), )

    def rows(self, records: list, partial: list[str]) -> list[list[str]]:
        from benchbackcompat.runtime.terminal import printable

        return [[printable(field) for field in row] for row in (
            [[r.key, r.label, self.variant[r.key], self.state(r)] for r in records]
            + [[key, self.partial[key], "", f"partial (steps {self.saved[key]} saved)"] for key in partial])]

    def listing(self) -> str:
        from tabulate import tabulate

        rows = self.rows(self.records, list(self.partial))
        return tabulate(rows, headers=["key", "cell", "variant", "status"], tablefmt="github") if rows else ""

    def pick(self, found: list, pending: list[str], asked: str, results: Path):
        """The record ``asked`` names (the newest current one of a label) and the other records of that label; one
        line listing the matches where it names several cells or none."""
        from tabulate import tabulate

        current = sorted((r for r in found if self.state(r) == r.status), key=lambda r: r.computed_at or "")
        if not found or (len(found) + len(pending) > 1 and (len({r.label for r in found}) > 1 or not current)):
            rows = self.rows(found, pending)
            listing = "\n" + tabulate(rows, headers=["key", "cell", "variant", "state"], tablefmt="github") if rows else ""
            raise BenchError(f"{len(rows)} cells match {asked!r} in {results}; give a longer key or a label "
                             f"(`benchbackcompat show --results {results}` lists them){listing}")
        record = current[-1] if current else found[0]
        return record, [r for r in found if r is not record]


def print_record(store, record, others: list, cells: StoredCells) -> None:
    """A record's header, its matrices with their statistics and flips, and its training curves."""
    from tabulate import tabulate

    from benchbackcompat.record import FinishedRecord
    from benchbackcompat.report.curves import curve_summary
    from benchbackcompat.results.flips import flip_lines, live_lines

    variant, state = cells.variant, cells.state
    echo(f"{record.label}  key {record.key}  variant {variant[record.key]}  status {state(record)}  "
          f"device {record.device or 'unknown'}")
    if others:
        echo(f"({len(others)} other records of this label: " + ", ".join(
            f"{r.key} {variant[r.key]} {state(r)}" for r in others) + "; shown: the newest current one, "
            f"variant {variant[record.key]})")
    if not isinstance(record, FinishedRecord):
        echo(record.reason)
        return
    for metric, matrix in record.matrices.items():
        T = len(matrix)
        rows = [[f"q{t}", *(f"{matrix[t][k]:.2f}" if k <= t and matrix[t][k] is not None else "" for k in range(T))] for t in range(T)]
        echo(f"\n{metric} (rows: query model t, columns: gallery model k)")
        echo(tabulate(rows, headers=["", *(f"g{k}" for k in range(T))], tablefmt="github", disable_numparse=True))
        values = record.metrics[metric].scalars()
        gated = {k: why for k in values if (why := cells.gates.get((record.key, metric, k)))}
        echo("  " + ", ".join(f"{k} –" if k in gated else f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                               for k, v in values.items()))
        for why in dict.fromkeys(gated.values()):  # P_com and its other names: one gate, as on the leaderboard
            echo(f"  – {', '.join(k for k, w in gated.items() if w == why)}: {why}")
        echo("\n".join(flip_lines(record, metric)) or "  flips: not defined (average precisions) or no per-query outcomes")
        echo("\n".join(live_lines(record, metric)))
    echo("\ntraining curves (per step: first -> last epoch, minimum)")
    echo(curve_summary(store.curves(record.key)))


def _variants(records: list) -> dict[str, str]:
    """Each record's variant as ``load_results`` and the leaderboard name it ("-" for the only configuration of
    its scenario and method), with its configuration hash: ``train.epochs=3 (config 1a2b3c4d)``."""
    from benchbackcompat.report.grouping import configuration_labels

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
    echo(render(table, notes, str(args.a), str(args.b)))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from benchbackcompat.results.frames import export_results

    written = export_results(args.results or [Path("results")], args.out)
    print("wrote " + " and ".join(str(path) for path in written))
    return 0
