"""``benchbackcompat status``: the state of every cell in a results directory.

finished / diverged / not-applicable  a record (checksummed, of this folder's key)
stale      a record computed by other code: the method's source or distribution changed, or the
           core's results version (a run recomputes it under a new key)
partial    no record yet, some steps saved (an interrupted run resumes after them)
failed     no record, a traceback (a run retries it)
pending    queued by a run (``cell.json``) and nothing computed yet

First the number of cells per state, then the time the finished cells recorded, per scenario, and what the
cells left would take at that scenario's mean (the cost of a grid, measured on the machine that ran it), then
the cells, those a run would compute first. Text from the records is printed as written, never obeyed by the
terminal (``runtime.terminal``).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.identity import RESULTS_VERSION, code_identity
from benchbackcompat.method import Method
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.store import ResultStore
from benchbackcompat.record import CellRecord, FinishedRecord
from benchbackcompat.runtime.terminal import printable


def cell_states(results: Path) -> list[dict[str, Any]]:
    """One row per cell folder: key, label, state, a detail (steps saved, why stale, the traceback) and the variant
    (``load_results``'s: what tells its configuration from the others of its scenario; "-" for the only one, "" for a
    cell without a record)."""
    from benchbackcompat.report.grouping import configuration_labels

    store = ResultStore(results)
    found: dict[str, CellRecord] = {}
    host = PluginHost()
    current: dict[str, dict[str, Any] | str] = {}
    rows = []
    for key in store.keys():
        folder = store.cell_dir(key)
        record = store.record(key)
        label = record.label if record is not None else (store.cell_entry(key) or {}).get("label", "?")
        row = {"key": key, "cell": label, "state": "", "detail": "", "seconds": None}
        if record is not None:
            row["state"] = record.status
            if isinstance(record, FinishedRecord) and record.timings:
                row["seconds"] = record.compute_seconds
            why = staleness(record, current, host)
            if why:
                row["state"], row["detail"] = "stale", why
        elif steps := sorted(int(p.stem.split("-")[1]) for p in folder.glob("step-*.pt") if p.stem.split("-")[1].isdigit()):
            row["state"], row["detail"] = "partial", "steps saved: " + ", ".join(map(str, steps))
        elif (folder / "traceback.txt").is_file():
            row["state"], row["detail"] = "failed", str(folder / "traceback.txt")
        else:
            row["state"] = "pending"
        rows.append(row)
        if record is not None:
            found[key] = record
    labels = configuration_labels(list(found.values()))
    variants = {key: label or "-" for key, (label, _) in zip(found, labels)}
    for row in rows:
        row["variant"] = variants.get(row["key"], "")
    return rows


def cost_by_scenario(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """Per scenario: cells timed, their hours, mean minutes per timed cell, cells left (partial, failed,
    pending, stale) and the hours those would take at that mean."""
    timed: dict[str, list[float]] = defaultdict(list)
    left: Counter[str] = Counter()
    for row in rows:
        scenario = row["cell"].split("/")[0]
        if row["seconds"] is not None and row["state"] == "finished":
            timed[scenario].append(row["seconds"])
        elif row["state"] in ("partial", "failed", "pending", "stale"):
            left[scenario] += 1
    table = []
    for scenario in sorted(set(timed) | set(left)):
        seconds = timed.get(scenario, [])
        mean = sum(seconds) / len(seconds) if seconds else None
        table.append([scenario, len(seconds), round(sum(seconds) / 3600, 2), round(mean / 60, 1) if mean else "?",
                      left[scenario], round(left[scenario] * mean / 3600, 2) if mean else "?"])
    return table


def staleness(record: CellRecord, current: dict[str, Any], host: PluginHost) -> str:
    """Why ``record`` was computed by other code than the installed one ("" when it was not)."""
    identity = record.identity
    if not identity:
        return "recorded without a code identity (an older version)"
    if identity.get("results_version") != RESULTS_VERSION:
        return f"core results version {identity.get('results_version')} (now {RESULTS_VERSION})"
    name = record.method
    if name not in current:
        try:
            current[name] = code_identity(host.method_class(name), within=Method)
        except BenchError as error:
            current[name] = str(error)
    now = current[name]
    if isinstance(now, str):
        return f"method not available: {now}"
    then = identity.get("code") or {}
    for field in ("distribution", "source_sha256", "class"):
        if then.get(field) != now[field]:
            return f"method {field} changed ({str(then.get(field))[:12]} -> {str(now[field])[:12]})"
    return ""


ATTENTION = ("failed", "stale", "partial", "pending", "diverged")  # listed first: what a run would do next


def render_status(results: Path, *, scenarios: tuple[str, ...] = (), methods: tuple[str, ...] = (),
                  limit: int | None = None) -> str:
    """The summary (cells per state), the compute per scenario, then the cells (those in ``ATTENTION`` first, at
    most ``limit`` of them; None: all); ``scenarios``/``methods``: only those cells (empty: all)."""
    from tabulate import tabulate

    if not (results / "cells").is_dir():
        raise BenchError(f"no results in {results}; pass the results directory of a run with --results DIR")
    every = cell_states(results)
    for asked, part, kind in ((scenarios, 0, "scenario"), (methods, 1, "method")):
        known = {row["cell"].split("/")[part] for row in every if len(row["cell"].split("/")) > part}
        if unknown := [name for name in asked if name not in known]:
            raise UnknownNameError(f"{kind} in {results}:", unknown[0], known)
    rows = [row for row in every if _selected(row["cell"], scenarios, methods)]
    counts = Counter(row["state"] for row in rows)
    chosen = " of " + ", ".join(f"{name} {'/'.join(values)}" for name, values in (("scenario", scenarios),
                                                                                  ("method", methods)) if values)
    summary = (f"{len(rows)} cells{chosen if scenarios or methods else ''}: "
               + (", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "none"))
    cost = tabulate(cost_by_scenario(rows), tablefmt="github", headers=[
        "scenario", "cells timed", "hours", "minutes per cell", "cells left", "hours left (at that mean)"])
    ordered = sorted(rows, key=lambda row: row["state"] not in ATTENTION)
    shown = ordered if limit is None else ordered[:limit]
    table = tabulate([[printable(row[name]) for name in ("key", "cell", "variant", "state", "detail")] for row in shown],
                     headers=["key", "cell", "variant", "state", "detail"], tablefmt="github")
    more = f"\n({len(rows) - len(shown)} more cells: --all lists every cell)" if len(shown) < len(rows) else ""
    return printable(f"{summary}\n\nCompute recorded by the finished cells (training, shared models where trained, "
                     f"evaluation):\n{cost}\n\n{table}{more}", lines=True)


def _selected(label: str, scenarios: tuple[str, ...], methods: tuple[str, ...]) -> bool:
    """Whether a cell label (scenario/method/seedN) is among ``scenarios`` and ``methods`` (empty: any)."""
    parts = label.split("/")
    return ((not scenarios or parts[0] in scenarios)
            and (not methods or (len(parts) > 1 and parts[1] in methods)))
