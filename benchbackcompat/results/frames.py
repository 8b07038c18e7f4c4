"""Stored results as pandas DataFrames: one row per cell x metric x statistic, and one per matrix entry.

Every row names its configuration as the leaderboard does: ``variant`` (the configuration fields and
hyperparameters that tell it apart from other stored configurations of its scenario and method, "" when
there is one) and ``config_hash`` (the resolved configuration without the seed). Seeds pool only within
one configuration: group by ``scenario``, ``variant`` and ``method`` (or by ``config_hash``), never by
``scenario`` and ``method`` alone.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbackcompat.errors import BenchError
from benchbackcompat import evaluations
from benchbackcompat.record import CellRecord, FinishedRecord

if TYPE_CHECKING:
    import pandas as pd

Paths = str | Path | Iterable[str | Path]
CELL_COLUMNS = ["scenario", "variant", "kind", "method", "seed", "status", "preset", "dataset", "params", "config_hash",
                "key", "label", "source", "version", "commit", "device"]
RESULT_COLUMNS = [*CELL_COLUMNS, "metric", "statistic", "value", "gated"]
MATRIX_COLUMNS = [*CELL_COLUMNS[:12], "metric", "query_model", "gallery_model", "value"]


def _pandas():
    try:
        import pandas
    except ImportError:
        raise BenchError("the Python API needs pandas: pip install pandas") from None
    return pandas


def _roots(paths: Paths) -> list[Path]:
    return [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]


def read_records(paths: Paths) -> list[CellRecord]:
    """The records under one or several results directories, merged (see ``report.merge``), each with its
    ``source`` directory; unfinished cells included."""
    from benchbackcompat.report.merge import merge_records
    from benchbackcompat.store.packing import results_kind, stored_records

    roots = _roots(paths)
    for root in roots:
        results_kind(root)
    sources = ((str(root), [r.model_copy(update={"source": str(root)}) for r in stored_records(root)])
               for root in roots)
    return merge_records(sources).records


def _cells(records: Iterable[CellRecord]) -> list[tuple[CellRecord, dict[str, Any]]]:
    """Each record with its cell's columns (the variant labels depend on which other records are read)."""
    from benchbackcompat.report.grouping import configuration_labels

    records = list(records)
    return [(record, _cell_fields(record, *labels)) for record, labels in zip(records, configuration_labels(records))]


def _cell_fields(record: CellRecord, variant: str, config_hash: str) -> dict[str, Any]:
    return {"scenario": record.scenario, "variant": variant, "kind": record.kind, "method": record.method,
            "seed": record.seed, "status": record.status, "preset": record.preset, "dataset": record.dataset,
            "params": json.dumps(record.params, sort_keys=True), "config_hash": config_hash, "key": record.key,
            "label": record.label,
            "source": record.source, "version": record.versions.benchbackcompat, "commit": record.versions.commit,
            "device": record.device}


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def results_frame(records: Iterable[CellRecord]) -> pd.DataFrame:
    """One row per cell x retrieval metric x scalar statistic (AC, AA, ACA, self, cross, p_com, ...), then the flip
    rates nfr_cross, pfr_cross, nfr_self, pfr_self (``metrics.flips``, derived from the stored per-query hits; mean over
    the consecutive pairs of a sequence) and, for a sequence, nfr_first, pfr_first (its last model on the first
    gallery: never backfilled), then, where the scenario set ``backfill`` or ``index``, the areas under the
    backfilling curves, their lowest points against the old self-test and the index gaps (``metrics.live``); a cell without metrics (diverged, failed, not applicable) is one row with
    empty metric, statistic and value.

    ``gated``: why the leaderboard does not show the value ("" where it does). A P_com whose update (reference self
    − old self, over the seeds of its configuration) is not significantly positive or below the minimum is NaN here
    as it is "–" there, with the pages' reason; so is every statistic stored with the same value under another name
    (``update_gain``, CoReS's Γ, on one update: ``report.columns.SAME_AS``)."""
    from benchbackcompat.report.seed_statistics import record_flips
    from benchbackcompat.report.columns import gated_names

    cells = _cells(records)
    gates, gated = _p_com_gates(cells), gated_names("p_com")
    rows = []
    for record, cell in cells:
        metrics = record.metrics if isinstance(record, FinishedRecord) else {}
        if not metrics:
            rows.append({**cell, "metric": None, "statistic": None, "value": math.nan, "gated": ""})
        for metric, summary in metrics.items():
            gate = gates.get((record.dataset, record.preset, cell["config_hash"], metric), "")
            rows += [{**cell, "metric": metric, "statistic": name,
                      "value": math.nan if gate and name in gated else _number(value),
                      "gated": gate if name in gated else ""}
                     for name, value in summary.scalars().items()]
            rows += [{**cell, "metric": metric, "statistic": name, "value": value, "gated": ""}
                     for name, value in {**record_flips(record, metric), **evaluations.statistics(record, metric)}.items()]
    return _pandas().DataFrame(rows, columns=RESULT_COLUMNS)


def statistic_gates(records: Iterable[CellRecord]) -> dict[tuple[str, str, str], str]:
    """(record key, metric, statistic) -> why the leaderboard does not show that number: P_com and every statistic
    with its value under another name (``report.columns.SAME_AS``) of the configurations whose update is undecidable."""
    from benchbackcompat.report.columns import gated_names

    cells = _cells(records)
    gates = _p_com_gates(cells)
    return {(record.key, metric, name): gate for record, cell in cells if isinstance(record, FinishedRecord)
            for metric in record.metrics
            if (gate := gates.get((record.dataset, record.preset, cell["config_hash"], metric)))
            for name in gated_names("p_com")}


def _p_com_gates(cells: list[tuple[CellRecord, dict[str, Any]]]) -> dict[tuple, str]:
    """(dataset, preset, configuration hash, metric) -> why the leaderboard does not show that configuration's P_com
    (``report.seed_statistics.undecidable_update``, over the seeds of the configuration, as a row of the tables)."""
    from benchbackcompat.report.seed_statistics import gain_replicates, gain_stat, undecidable_update

    groups: dict[tuple, list[FinishedRecord]] = {}
    for record, cell in cells:
        if isinstance(record, FinishedRecord):
            groups.setdefault((record.dataset, record.preset, cell["config_hash"]), []).append(record)
    gated = {(group, metric) for group, members in groups.items()
             for metric in (m for r in members for m, s in r.metrics.items() if "p_com" in s.scalars())}
    members = {id(r): r for group, _ in gated for r in groups[group]}.values()
    replicates = gain_replicates(members, {metric for _, metric in gated})
    gates = {}
    for group, metric in gated:
        gate = undecidable_update(gain_stat(groups[group], metric, replicates))
        if gate is not None:
            gates[(*group, metric)] = gate.reason
    return gates


def matrix_frame(records: Iterable[CellRecord]) -> pd.DataFrame:
    """One row per compatibility-matrix entry C[t][k] (k <= t): query model t, gallery model k, value in %."""
    rows = []
    for record, fields in _cells(records):
        cell = {k: v for k, v in fields.items() if k in MATRIX_COLUMNS}
        for metric, matrix in (record.matrices if isinstance(record, FinishedRecord) else {}).items():
            rows += [{**cell, "metric": metric, "query_model": t, "gallery_model": k, "value": _number(matrix[t][k])}
                     for t in range(len(matrix)) for k in range(t + 1)]
    return _pandas().DataFrame(rows, columns=MATRIX_COLUMNS)


def load_results(path: Paths) -> pd.DataFrame:
    """The results of one or several results directories: one row per cell x metric x statistic."""
    return results_frame(read_records(path))


def load_matrix_entries(path: Paths) -> pd.DataFrame:
    """The compatibility matrices of one or several results directories: one row per entry."""
    return matrix_frame(read_records(path))


def export_results(path: Paths, out: str | Path) -> list[Path]:
    """Write :func:`load_results` to ``out`` (``.csv`` or ``.parquet``) and :func:`load_matrix_entries` beside
    it (``NAME-matrix.csv``/``.parquet``); returns the files written."""
    from benchbackcompat.report.exports import spreadsheet_safe

    out = Path(out)
    if out.suffix not in (".csv", ".parquet"):
        raise BenchError(f"cannot export to {out}: the file name must end in .csv or .parquet")
    records = read_records(path)
    written = []
    for frame, target in ((results_frame(records), out), (matrix_frame(records), out.with_name(f"{out.stem}-matrix{out.suffix}"))):
        target.parent.mkdir(parents=True, exist_ok=True)
        if out.suffix == ".csv":  # text columns spreadsheet-safe (report.exports); numbers stay numbers
            frame.map(spreadsheet_safe).to_csv(target, index=False)
        else:
            try:
                frame.to_parquet(target, index=False)
            except ImportError:
                raise BenchError("writing parquet needs pyarrow: pip install pyarrow (or export to .csv)") from None
        written.append(target)
    return written
