"""Per-seed self-tests, cross-test, update and P_com of a two-model scenario's rows, as the study page tabulates them.

    python studies/cpu-scale/two_model_values.py RECORDS SCENARIO [--against METHOD] [--metric cmc@1] [--seeds 0-7]

RECORDS is a results folder (e.g. leaderboard/records). Each row of the leaderboard's tables (one configuration on
one dataset) prints, per statistic, the mean with its 95% t-interval over seeds and the per-seed values. The update
is reference self − old self, what P_com divides by (the page withholds P_com below 10 points). ``--against M`` adds
M − row for P_com and for cross − old self, paired by seed, with the exact sign-flip p against 0.
"""
from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchbackcompat.tooling import parse_seeds, sign_flip_p
from leaderboard_rows import interval, leaderboard_rows

STATISTICS = {
    "old self": lambda m: m.old_self,
    "reference self": lambda m: m.reference_self,
    "self": lambda m: m.self,
    "cross": lambda m: m.cross,
    "cross - old self": lambda m: m.cross - m.old_self,
    "update": lambda m: m.reference_self - m.old_self,
    "P_com": lambda m: m.p_com,
}


def row_values(records: list, metric: str) -> dict[str, dict[int, float]]:
    """Each statistic's value by seed (a record lacking one of its inputs is left out of that statistic)."""
    values: dict[str, dict[int, float]] = defaultdict(dict)
    for record in records:
        summary = record.metrics[metric]
        for name, of in STATISTICS.items():
            try:
                values[name][record.seed] = float(of(summary))
            except TypeError:  # an input is None: the record has no reference self-tests
                continue
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path)
    parser.add_argument("scenario")
    parser.add_argument("--against", help="print this method minus each row, paired by seed")
    parser.add_argument("--metric", default="cmc@1")
    parser.add_argument("--seeds", help="only these seeds (e.g. 0-7)")
    args = parser.parse_args()
    seeds = set(parse_seeds(args.seeds)) if args.seeds else None
    rows = leaderboard_rows(args.records, args.scenario, lambda r: seeds is None or r.seed in seeds)
    rows = {label: found for label, found in rows.items() if args.metric in found[0].metrics}
    values = {row: row_values(found, args.metric) for row, found in sorted(rows.items())}
    methods = {row: found[0].method for row, found in rows.items()}
    against = next((v for row, v in values.items() if methods[row] == args.against), None)
    if args.against and against is None:
        raise SystemExit(f"--against {args.against}: no finished rows of that method in {args.scenario}")
    for label, by_name in values.items():
        method = methods[label]
        print(f"{label}: seeds {sorted(by_name['self'])}")
        for name, by_seed in by_name.items():
            print(f"  {name:17} {interval(by_seed):28} " + " ".join(f"{by_seed[s]:.3f}" for s in sorted(by_seed)))
        if against is None or method == args.against:
            continue
        for name in ("P_com", "cross - old self"):
            paired = sorted(set(against[name]) & set(by_name[name]))
            if not paired:
                continue
            differences = {s: against[name][s] - by_name[name][s] for s in paired}
            p = sign_flip_p(np.array(list(differences.values())))
            print(f"  {args.against} - {method}, {name}: {interval(differences)} exact p = {p:.3g} "
                  f"(seeds {paired}): " + " ".join(f"{d:+.3f}" for d in differences.values()))


if __name__ == "__main__":
    main()
