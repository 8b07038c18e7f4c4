"""``benchbackcompat status``: the state of every cell in a results directory.

finished / diverged / not-applicable  a record (checksummed, of this folder's key)
stale      a record computed by other code: the method's source or distribution changed, or the
           core's results version (a run recomputes it under a new key)
partial    no record yet, some steps saved (an interrupted run resumes after them)
failed     no record, a traceback (a run retries it)
pending    queued by a run (``cell.json``) and nothing computed yet
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from benchbackcompat.errors import BenchError
from benchbackcompat.identity import RESULTS_VERSION, code_identity
from benchbackcompat.method import Method
from benchbackcompat.plugin_host import PluginHost
from benchbackcompat.store import ResultStore
from benchbackcompat.record import CellRecord


def cell_states(results: Path) -> list[dict[str, Any]]:
    """One row per cell folder: key, label, state and a detail (steps saved, why stale, the traceback)."""
    store = ResultStore(results)
    host = PluginHost()
    current: dict[str, dict[str, Any] | str] = {}
    rows = []
    for key in store.keys():
        folder = store.cell_dir(key)
        record = store.record(key)
        label = record.label if record is not None else (store.cell_entry(key) or {}).get("label", "?")
        row = {"key": key, "cell": label, "state": "", "detail": ""}
        if record is not None:
            row["state"] = record.status
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
    return rows


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


def render_status(results: Path) -> str:
    from tabulate import tabulate

    if not (results / "cells").is_dir():
        raise BenchError(f"no results in {results}; pass the results directory of a run with --results DIR")
    rows = cell_states(results)
    counts = Counter(row["state"] for row in rows)
    table = tabulate([list(row.values()) for row in rows], headers=["key", "cell", "state", "detail"], tablefmt="github")
    return f"{table}\n{len(rows)} cells: " + ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
