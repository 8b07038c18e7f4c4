"""Per-seed AC, ACA, AA and fine-tuning gain of a multi-model scenario's rows, as the study page tabulates them.

    python studies/cpu-scale/seed_values.py RECORDS SCENARIO [METHOD[,METHOD]] [--set KEY=VALUE ...]

RECORDS is a results folder (e.g. leaderboard/records). Each row of the leaderboard's tables (one configuration on
one dataset) prints its seeds, the per-seed values, and the mean with a 95% t-interval over seeds. ``--set lam=1.0``
(a TOML value) keeps the rows whose hyperparameters include it.
"""
from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from benchbackcompat.metrics import average_accuracy, average_compatibility, average_compatibility_accuracy
from benchbackcompat.tooling import fine_tuning_gain
from leaderboard_rows import interval, leaderboard_rows


def main(argv: list[str]) -> None:
    settings = [a.split("=", 1) for a in argv[argv.index("--set") + 1:]] if "--set" in argv else []
    wanted = {key: tomllib.loads(f"v = {value}")["v"] for key, value in settings}
    positional = argv[:argv.index("--set")] if "--set" in argv else argv
    if len(positional) not in (2, 3):
        raise SystemExit(__doc__)
    records, scenario = Path(positional[0]), positional[1]
    methods = set(positional[2].split(",")) if len(positional) == 3 else None

    def keep(record) -> bool:
        return (not methods or record.method in methods) and all(
            record.params.get(key) == value for key, value in wanted.items())

    for label, found in sorted(leaderboard_rows(records, scenario, keep).items()):
        print(f"{label}: seeds {[r.seed for r in found]}")
        metric = next(iter(found[0].matrices))
        matrices = [np.asarray(r.matrices[metric], dtype=float) for r in found]
        for name, values in (("AC", [average_compatibility(m) for m in matrices]),
                             ("ACA", [average_compatibility_accuracy(m) for m in matrices]),
                             ("AA", [average_accuracy(m) for m in matrices])):
            print(f"  {name:4} {interval(dict(enumerate(values))):28} " + " ".join(f"{v:.3g}" for v in values))
        gains = fine_tuning_gain(SimpleNamespace(finished=found), metric)
        if gains:
            print(f"  gain {interval(gains):28} " + " ".join(f"{v:+.2f}" for v in gains.values()))


if __name__ == "__main__":
    main(sys.argv[1:])
