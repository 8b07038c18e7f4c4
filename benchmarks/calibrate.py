"""Is a preset's scale calibrated? Train its cells as given and with 50% more epochs, and compare.

Runs ``benchbackcompat run`` twice (the preset as it is, then ``train.epochs``, ``train.min_steps`` where
set and, where the scenario pretrains, ``pretrain.epochs`` times ``--factor``) into ``OUT/base`` and ``OUT/longer``
and prints, per cell and model, the self-tests (diagonal of the compatibility matrix, plus the old
model's and the independent reference's self-tests that P_com uses) at both lengths, and the checks
of issue 20's CPU scale:

- converged: 50% more epochs changes no self-test by more than ``--tolerance`` points: each self-test's change,
  averaged over the seeds, has a 95% interval (queries resampled in pairs, combined with the spread over seeds)
  inside [-tolerance, +tolerance]; "not converged" when it lies entirely beyond, "undecidable" when it straddles;
- decidable update: reference self − old self is at least ``--min-gain`` points (single updates);
- not saturated: no self-test above 95%;
- far above chance: every self-test at least twice the chance level.

    python benchmarks/calibrate.py --preset cpu --scenario ext-class,both --methods independent \
        --seeds 0 --out results-calibration [--base results] [--factor 1.5] [--metric cmc@1] \
        [--summary leaderboard/records/calibration/cpu-ext-class.json] [-- --workers 2]

Arguments after ``--`` go to both ``benchbackcompat run`` calls. Finished cells are reused: ``--base``
points the run as given at an existing results folder (e.g. the leaderboard's), so only the longer
run trains. ``--summary`` writes the measured self-tests as JSON (``report.calibration``); stored in
a results folder's ``calibration/``, ``benchbackcompat leaderboard`` names them in the claims report.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import torch
from tabulate import tabulate

from benchbackcompat.cli import build_parser, run_request
from benchbackcompat.plan import assign_fingerprints
from benchbackcompat.record import FinishedRecord
from benchbackcompat.runner import run as plan_run
from benchbackcompat.store import ResultStore
from benchbackcompat.report.calibration import BEYOND, UNDECIDED, CalibratedCell, Calibration, change_intervals


def run_arguments(out: Path, args: argparse.Namespace, extra: list[str]) -> list[str]:
    return ["run", "--preset", args.preset, "--scenario", args.scenario, "--methods", args.methods, "--seeds",
            args.seeds, "--out", str(out), "-q", *extra]


def run(out: Path, args: argparse.Namespace, extra: list[str]) -> float:
    """One ``benchbackcompat run`` into ``out``; its wall time in seconds."""
    command = ["benchbackcompat", *run_arguments(out, args, extra)]
    print("$", " ".join(command), flush=True)
    started = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - started


def self_tests(record: FinishedRecord, metric: str) -> dict[str, float]:
    """The record's self-tests in %: each trained model's diagonal entry, the old model and the reference."""
    matrix = record.matrices[metric]
    values = record.metrics[metric]
    tests = {f"model {t}": float(matrix[t][t]) for t in range(len(matrix)) if matrix[t][t] is not None}
    for name in ("old_self", "reference_self"):
        if getattr(values, name) is not None:
            tests[name] = float(getattr(values, name))
    return tests


def finished(out: Path, args: argparse.Namespace, extra: list[str]) -> dict[tuple, FinishedRecord]:
    """The finished records, keyed by scenario, method and seed, of exactly the cells that ``run(out, args, extra)``
    plans, where they computed ``--metric``. ``out`` may hold others: a ``--base`` holds ablations of a method
    and other evaluation sizes, multi-step-seen one table per metric."""
    request = run_request(build_parser().parse_args(run_arguments(out, args, extra)))
    plan = plan_run(request.model_copy(update={"dry_run": True})).plan
    assign_fingerprints(plan, torch.device("cpu"))  # the cell keys (the data's content, wherever it runs)
    store = ResultStore(out)
    records = [store.record(cell.key) for cell in plan.cells]
    return {(r.scenario, r.method, r.seed): r for r in records if isinstance(r, FinishedRecord) and args.metric in r.matrices}


def paired(base: dict[tuple, FinishedRecord], longer: dict[tuple, FinishedRecord]) -> tuple[list[tuple], list[str]]:
    """(cell, as given, longer) for each cell of the run as given, and a failure for each one the longer run lacks."""
    pairs, failures = [], []
    for cell, record in sorted(base.items()):
        if cell in longer:
            pairs.append((cell, record, longer[cell]))
        else:
            failures.append(f"{'/'.join(map(str, cell))}: no finished cell in the longer run")
    return pairs, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--scenario", default="ext-class")
    parser.add_argument("--methods", default="independent")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--out", type=Path, default=Path("results-calibration"))
    parser.add_argument("--factor", type=float, default=1.5, help="epochs multiplier of the longer run")
    parser.add_argument("--metric", default="cmc@1")
    parser.add_argument("--tolerance", type=float, default=2.0, help="largest self-test change allowed, points")
    parser.add_argument("--min-gain", type=float, default=15.0, help="smallest update gain of a single update, points")
    parser.add_argument("--base", type=Path, help="results folder of the run as given (default OUT/base)")
    parser.add_argument("--summary", type=Path, help="also write the measured self-tests here as JSON")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]

    base_dir = args.base or args.out / "base"
    base_s = run(base_dir, args, extra)
    base = finished(base_dir, args, extra)
    if not base:
        sys.exit(f"error: no finished cell of {args.scenario} in {base_dir} computed {args.metric}; check --scenario, "
                 "--seeds and --metric (cl2r and iam-cl2r compute top1)")
    some = next(iter(base.values()))
    epochs = some.config["train"]["epochs"]
    longer_epochs = round(epochs * args.factor)
    longer = [*extra, "--set", f"train.epochs={longer_epochs}"]
    min_steps = some.config["train"].get("min_steps")
    longer_min_steps = round(min_steps * args.factor) if min_steps else None
    if longer_min_steps:  # a step floor (multi-step's small first models) grows with the epochs
        longer += ["--set", f"train.min_steps={longer_min_steps}"]
    if some.config.get("pretrain"):
        longer += ["--set", f"pretrain.epochs={round(some.config['pretrain']['epochs'] * args.factor)}"]
    longer_s = run(args.out / "longer", args, longer)
    extended = finished(args.out / "longer", args, longer)

    rows, calibrated = [], []
    pairs, failures = paired(base, extended)
    for cell, record, record_longer in pairs:
        chance = float(record.chance[args.metric])
        before, after = self_tests(record, args.metric), self_tests(record_longer, args.metric)
        calibrated.append(CalibratedCell(scenario=record.scenario, method=record.method, seed=record.seed,
                                         self_tests={m: (v, after[m]) for m, v in before.items()}))
        for model, value in before.items():
            change = after[model] - value
            rows.append([*cell, model, f"{value:.1f}", f"{after[model]:.1f}", f"{change:+.1f}", f"{chance:.1f}"])
            if max(value, after[model]) > 95:
                failures.append(f"{'/'.join(map(str, cell))} {model}: self-test above 95%")
            if value < 2 * chance:
                failures.append(f"{'/'.join(map(str, cell))} {model}: below twice chance ({value:.1f} < {2 * chance:.1f})")
        if "reference_self" in before and "old_self" in before and len(record.matrices[args.metric]) == 2:
            gain = before["reference_self"] - before["old_self"]
            rows.append([*cell, "update gain (ref - old)", f"{gain:.1f}",
                         f"{after['reference_self'] - after['old_self']:.1f}", "", ""])
            if gain < args.min_gain:
                failures.append(f"{'/'.join(map(str, cell))}: update gain {gain:.1f} < {args.min_gain:g} points")
    floors = (f", >= {min_steps} steps", f", >= {longer_min_steps} steps") if min_steps else ("", "")
    print(tabulate(rows, headers=["scenario", "method", "seed", "self-test", f"{epochs} epochs{floors[0]}",
                                  f"{longer_epochs} epochs{floors[1]}", "change", "chance"], tablefmt="github"))
    changes = [(c, c.verdict(args.tolerance))
               for c in change_intervals([(given, longer) for _, given, longer in pairs], args.metric)]
    print(f"\nMean change over the seeds with its 95% interval (points; tolerance ±{args.tolerance:g}):")
    print(tabulate([[c.scenario, c.method, c.model, ",".join(map(str, c.seeds)), f"{c.mean:+.1f}",
                     f"[{c.low:+.1f}, {c.high:+.1f}]", verdict] for c, verdict in changes],
                   headers=["scenario", "method", "self-test", "seeds", "change", "95% interval", "verdict"],
                   tablefmt="github", disable_numparse=True))
    worst = max((c.largest_change for c in calibrated), default=0.0)
    print(f"\n{args.metric}. Largest change of one seed with {args.factor:g}x epochs: {worst:.1f} points. "
          f"Wall time: {base_s:.0f} s as given, {longer_s:.0f} s longer.")
    failures += [f"not converged: {c.scenario} {c.describe()} points, beyond ±{args.tolerance:g}"
                 for c, verdict in changes if verdict == BEYOND]
    undecided = [f"{c.scenario} {c.describe()}" for c, verdict in changes if verdict == UNDECIDED]
    if failures:
        print("not calibrated:\n- " + "\n- ".join(failures))
    elif undecided:
        print(f"undecidable at this evaluation size (neither within nor beyond ±{args.tolerance:g}; more seeds or "
              "queries narrow the intervals):\n- " + "\n- ".join(undecided))
    else:
        print("calibrated")
    if args.summary:
        summary = Calibration(preset=args.preset, dataset=some.dataset or "?", metric=args.metric,
                              epochs=(epochs, longer_epochs), tolerance=args.tolerance,
                              min_steps=(min_steps, longer_min_steps) if min_steps else None,
                              command=" ".join(["python", *sys.argv]), cells=calibrated,
                              changes=[c for c, _ in changes])
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(summary.model_dump_json(indent=1) + "\n")
        print(f"wrote {args.summary}")


if __name__ == "__main__":
    main()
