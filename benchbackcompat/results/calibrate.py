"""Is a preset's scale calibrated? Train its cells as given and with ``factor`` times the epochs, and compare.

``benchbackcompat calibrate`` runs the preset twice, as given (into ``--base``, default ``OUT/base``) and with
``train.epochs``, ``train.min_steps`` where set and ``pretrain.epochs`` where the scenario pretrains multiplied by
``--factor`` (into ``OUT/longer``), and prints, per cell and model, the self-tests (the diagonal of the
compatibility matrix, plus the old model's and the reference's self-tests that P_com divides by) at both lengths,
and the checks of a decidable scale:

- converged: each self-test's change, averaged over the seeds, has a 95% interval (queries resampled in pairs,
  combined with the spread over seeds; ``report.calibration``) inside [-tolerance, +tolerance]; "not converged"
  when it lies entirely beyond, "undecidable" when it straddles;
- decidable update: reference self - old self is at least ``min_gain`` points (single updates);
- not saturated: no self-test above 95%;
- far above chance: every self-test at least twice the chance level.

Finished cells are reused, so pointing ``--base`` at an existing results folder trains only the longer run. The
summary (``--summary``) is a :class:`~benchbackcompat.report.calibration.Calibration`; stored in a results folder's
``calibration/``, ``benchbackcompat leaderboard`` names it on the claims page.
"""
from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabulate import tabulate

from benchbackcompat.errors import BenchError
from benchbackcompat.execution.request import RunRequest
from benchbackcompat.runtime.logs import log
from benchbackcompat.record import CellRecord, FinishedRecord
from benchbackcompat.report.calibration import BEYOND, UNDECIDED, CalibratedCell, Calibration, change_intervals

Runner = Callable[[RunRequest], Sequence[CellRecord]]
"""Runs a request (as ``benchbackcompat run`` does) and returns the records of every cell it planned."""

Cell = tuple[str, str, int]


@dataclass(frozen=True)
class CalibrationOptions:
    """What to calibrate and how (the options of ``benchbackcompat calibrate``)."""

    preset: str = "cpu"
    scenario: str = "ext-class"
    methods: str = "independent"
    seeds: str = "0"
    out: Path = Path("results-calibration")
    factor: float = 1.5  # epochs multiplier of the longer run
    metric: str = "cmc@1"
    tolerance: float = 2.0  # largest self-test change allowed, points
    min_gain: float = 15.0  # smallest update gain of a single update, points
    base: Path | None = None  # results folder of the run as given (default OUT/base)
    summary: Path | None = None  # also write the measured self-tests here as JSON
    run_args: tuple[str, ...] = ()  # more ``benchbackcompat run`` arguments, given to both runs (as typed)
    request: RunRequest | None = None  # the run as given, ``run_args`` included (None: the options above alone)

    def command(self) -> str:
        """The ``benchbackcompat calibrate`` command line of these options (recorded in the summary)."""
        words = ["benchbackcompat", "calibrate", "--preset", self.preset, "--scenario", self.scenario, "--methods",
                 self.methods, "--seeds", self.seeds]
        defaults = CalibrationOptions()
        for name in ("out", "factor", "metric", "tolerance", "min_gain", "base", "summary"):
            value = getattr(self, name)
            if value is not None and value != getattr(defaults, name):
                words += ["--" + name.replace("_", "-"), f"{value:g}" if isinstance(value, float) else str(value)]
        return shlex.join([*words, *(["--", *self.run_args] if self.run_args else [])])

    def run_request(self, out: Path, overrides: dict[str, Any] | None = None) -> RunRequest:
        """The run as given, into ``out``, with ``overrides`` over its own."""
        given = self.request or RunRequest(scenarios=self.scenario, methods=self.methods, preset=self.preset,
                                           seeds=self.seeds)
        return given.model_copy(update={"out": out, "overrides": {**given.overrides, **(overrides or {})}})


@dataclass
class CalibrationResult:
    """What a calibration measured: the printed report, the summary and the checks that failed."""

    text: str
    summary: Calibration
    failures: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "not calibrated" if self.failures else "undecidable" if self.undecided else "calibrated"


def self_tests(record: FinishedRecord, metric: str) -> dict[str, float]:
    """The record's self-tests in %: each trained model's diagonal entry, the old model and the reference."""
    matrix = record.matrices[metric]
    values = record.metrics[metric]
    tests = {f"model {t}": float(matrix[t][t]) for t in range(len(matrix)) if matrix[t][t] is not None}
    for name in ("old_self", "reference_self"):
        if getattr(values, name) is not None:
            tests[name] = float(getattr(values, name))
    return tests


def finished(records: Sequence[CellRecord], metric: str) -> dict[Cell, FinishedRecord]:
    """The finished records of a run, by scenario, method and seed, that computed ``metric``."""
    return {(r.scenario, r.method, r.seed): r for r in records if isinstance(r, FinishedRecord) and metric in r.matrices}


def paired(base: dict[Cell, FinishedRecord], longer: dict[Cell, FinishedRecord]) -> tuple[list[tuple], list[str]]:
    """(cell, as given, longer) for each cell of the run as given, and a failure for each one the longer run lacks."""
    pairs, failures = [], []
    for cell, record in sorted(base.items()):
        if cell in longer:
            pairs.append((cell, record, longer[cell]))
        else:
            failures.append(f"{'/'.join(map(str, cell))}: no finished cell in the longer run")
    return pairs, failures


def longer_overrides(record: FinishedRecord, factor: float) -> tuple[dict[str, int], int, int | None]:
    """The overrides of the longer run, its epochs and its step floor (None without one)."""
    train = record.config["train"]
    epochs = round(train["epochs"] * factor)
    overrides = {"train.epochs": epochs}
    min_steps = round(train["min_steps"] * factor) if train.get("min_steps") else None
    if min_steps:  # a step floor (small first models) grows with the epochs
        overrides["train.min_steps"] = min_steps
    if record.config.get("pretrain"):
        overrides["pretrain.epochs"] = round(record.config["pretrain"]["epochs"] * factor)
    return overrides, epochs, min_steps


def calibrate(options: CalibrationOptions, run: Runner) -> CalibrationResult:
    """Run the preset as given and longer (``run``: see :data:`Runner`), compare the self-tests and write the summary
    where ``options.summary`` says."""
    base_dir = options.base or options.out / "base"
    request = options.run_request(base_dir)
    log.info(f"the run as given, into {base_dir}")
    started = time.perf_counter()
    base = finished(run(request), options.metric)
    base_s = time.perf_counter() - started
    if not base:
        raise BenchError(f"no finished cell of {options.scenario} in {base_dir} computed {options.metric}; check "
                         "--scenario, --seeds and --metric (cl2r and iam-cl2r compute top1)")
    some = next(iter(base.values()))
    epochs, min_steps = some.config["train"]["epochs"], some.config["train"].get("min_steps")
    longer, longer_epochs, longer_min_steps = longer_overrides(some, options.factor)
    log.info(f"the run {options.factor:g}x longer ({', '.join(f'{k}={v}' for k, v in longer.items())}), into "
             f"{options.out / 'longer'}")
    started = time.perf_counter()
    extended = finished(run(options.run_request(options.out / "longer", longer)), options.metric)
    longer_s = time.perf_counter() - started

    rows, calibrated = [], []
    pairs, failures = paired(base, extended)
    for cell, record, record_longer in pairs:
        name = "/".join(map(str, cell))
        chance = float(record.chance[options.metric])
        before, after = self_tests(record, options.metric), self_tests(record_longer, options.metric)
        calibrated.append(CalibratedCell(scenario=record.scenario, method=record.method, seed=record.seed,
                                         self_tests={m: (v, after[m]) for m, v in before.items()}))
        for model, value in before.items():
            rows.append([*cell, model, f"{value:.1f}", f"{after[model]:.1f}", f"{after[model] - value:+.1f}",
                         f"{chance:.1f}"])
            if max(value, after[model]) > 95:
                failures.append(f"{name} {model}: self-test above 95%")
            if value < 2 * chance:
                failures.append(f"{name} {model}: below twice chance ({value:.1f} < {2 * chance:.1f})")
        if "reference_self" in before and "old_self" in before and len(record.matrices[options.metric]) == 2:
            gain = before["reference_self"] - before["old_self"]
            rows.append([*cell, "update gain (ref - old)", f"{gain:.1f}",
                         f"{after['reference_self'] - after['old_self']:.1f}", "", ""])
            if gain < options.min_gain:
                failures.append(f"{name}: update gain {gain:.1f} < {options.min_gain:g} points")
    floors = (f", >= {min_steps} steps", f", >= {longer_min_steps} steps") if min_steps else ("", "")
    lines = [tabulate(rows, headers=["scenario", "method", "seed", "self-test", f"{epochs} epochs{floors[0]}",
                                     f"{longer_epochs} epochs{floors[1]}", "change", "chance"], tablefmt="github")]
    changes = [(c, c.verdict(options.tolerance))
               for c in change_intervals([(given, longer) for _, given, longer in pairs], options.metric)]
    lines.append(f"\nMean change over the seeds with its 95% interval (points; tolerance ±{options.tolerance:g}):")
    lines.append(tabulate([[c.scenario, c.method, c.model, ",".join(map(str, c.seeds)), f"{c.mean:+.1f}",
                            f"[{c.low:+.1f}, {c.high:+.1f}]", verdict] for c, verdict in changes],
                          headers=["scenario", "method", "self-test", "seeds", "change", "95% interval", "verdict"],
                          tablefmt="github", disable_numparse=True))
    worst = max((c.largest_change for c in calibrated), default=0.0)
    lines.append(f"\n{options.metric}. Largest change of one seed with {options.factor:g}x epochs: {worst:.1f} points. "
                 f"Wall time: {base_s:.0f} s as given, {longer_s:.0f} s longer.")
    failures += [f"not converged: {c.scenario} {c.describe()} points, beyond ±{options.tolerance:g}"
                 for c, verdict in changes if verdict == BEYOND]
    undecided = [f"{c.scenario} {c.describe()}" for c, verdict in changes if verdict == UNDECIDED]
    if failures:
        lines.append("not calibrated:\n- " + "\n- ".join(failures))
    elif undecided:
        lines.append(f"undecidable at this evaluation size (neither within nor beyond ±{options.tolerance:g}; more "
                     "seeds or queries narrow the intervals):\n- " + "\n- ".join(undecided))
    else:
        lines.append("calibrated")
    summary = Calibration(preset=options.preset, dataset=some.dataset or "?", metric=options.metric,
                          epochs=(epochs, longer_epochs), tolerance=options.tolerance,
                          min_steps=(min_steps, longer_min_steps) if min_steps else None,
                          command=options.command(), cells=calibrated, changes=[c for c, _ in changes])
    if options.summary:
        options.summary.parent.mkdir(parents=True, exist_ok=True)
        options.summary.write_text(summary.model_dump_json(indent=1) + "\n")
        lines.append(f"wrote {options.summary}")
    return CalibrationResult("\n".join(lines), summary, failures, undecided)
