"""Per-seed AC, ACA, AA and fine-tuning gain of a multi-model scenario's rows, as the study page tabulates them.

    python studies/cpu-scale/seed_values.py RECORDS SCENARIO [METHOD[,METHOD]] [--set KEY=VALUE ...]

RECORDS is a results folder (e.g. leaderboard/records). Each row (method and hyperparameters) prints its seeds, the
per-seed values, and the mean with a 95% t-interval over seeds; one machine's data only (rows are split by the
dataset's source fingerprint, never pooled). ``--set lam=1.0`` (a TOML value) keeps the rows whose hyperparameters include it.
"""
from __future__ import annotations

import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

from benchbackcompat.metrics.compatibility import (
    average_accuracy,
    average_compatibility,
    average_compatibility_accuracy,
)
from benchbackcompat.report.claims.premises import fine_tuning_gain
from benchbackcompat.report.merge import read_results


def interval(values: list[float]) -> str:
    mean = float(np.mean(values))
    if len(values) < 2:
        return f"{mean:.3f}"
    half = stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1) / np.sqrt(len(values))
    return f"{mean:.3f} [{mean - half:.3f}, {mean + half:.3f}]"


def main(argv: list[str]) -> None:
    wanted = [a.split("=", 1) for a in argv[argv.index("--set") + 1:]] if "--set" in argv else []
    positional = argv[:argv.index("--set")] if "--set" in argv else argv
    if len(positional) not in (2, 3):
        raise SystemExit(__doc__)
    records, scenario = Path(positional[0]), positional[1]
    methods = set(positional[2].split(",")) if len(positional) == 3 else None
    rows: dict[tuple, list] = defaultdict(list)
    for record in read_results([records]).records:
        if record.scenario != scenario or record.status != "finished" or (methods and record.method not in methods):
            continue
        if any(record.params.get(key) != tomllib.loads(f"v = {value}")["v"] for key, value in wanted):
            continue
        rows[(record.method, str(sorted(record.params.items())), (record.data_source or "")[:8])].append(record)
    for (method, params, data), found in sorted(rows.items()):
        found.sort(key=lambda r: r.seed)
        metric = next(iter(found[0].matrices))
        matrices = [np.asarray(r.matrices[metric], dtype=float) for r in found]
        print(f"{method} {params} data {data}: seeds {[r.seed for r in found]}")
        for name, values in (("AC", [average_compatibility(m) for m in matrices]),
                             ("ACA", [average_compatibility_accuracy(m) for m in matrices]),
                             ("AA", [average_accuracy(m) for m in matrices])):
            print(f"  {name:4} {interval(values):28} " + " ".join(f"{v:.3g}" for v in values))
        gains = fine_tuning_gain(type("Row", (), {"finished": found})(), metric)
        if gains:
            print(f"  gain {interval(list(gains.values())):28} " + " ".join(f"{v:+.2f}" for v in gains.values()))


if __name__ == "__main__":
    main(sys.argv[1:])
