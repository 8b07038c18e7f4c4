"""Judging a declared claim on the stored tables.

A claim is judged on every table of its protocol (scenario kind, retrieval protocol and metric, split, classes
scored). A table that also has its setting (models, dataset or declared stand-in, architecture, pretraining) is
*supporting*; one that differs in the setting is *supporting, other setting*, with the difference named; the table
the claim declares (``deciding``) gives its verdict, on the seeds it declares (0 .. seeds-1, never more).

Each comparison is the paired difference over those seeds with its t-interval (``metrics.bootstrap``: never narrower
than the query bootstrap within a seed) and an exact sign-flip test (``metrics.sign_flip``); a decision needs both.

- *reproduced*: the interval lies above 0, the exact test rejects 0, and the estimate reaches the declared effect;
- *same direction, smaller effect*: the same, with the estimate below the declared effect;
- *not reproduced*: the interval lies below the declared effect and the exact test rejects it, the direction not
  established;
- *undecidable*: otherwise, or a precondition fails (a row at chance level, a declared seed diverged, P_com not
  shown, the premise not shown);
- *untested*: the deciding table is not in the results, or its declared run is not complete (a compared row
  without a record at one of the declared seeds), unless every test is already undecidable for a row that holds all
  its declared seeds (e.g. its P_com not shown): no missing record can change that, so it is *undecidable* at once.

An absence ("X is not compatible") is reproduced when X's interval lies below its margin, not reproduced when it
lies above. A claim of several comparisons holds when every one holds, each at the plain level (no correction: all
must hold); it fails when any one fails, which is decided at the Bonferroni level (any single failure decides).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from benchbackcompat.metrics import bootstrap
from benchbackcompat.metrics.sign_flip import seeds_to_reach, sign_flip_p, smallest_p
from benchbackcompat.report.aggregate import (Missing, Row, Stat, Table, flatten, gain_replicates, gain_stat, records_stat,
                                              undecidable_update)
from benchbackcompat.report.calibration import Calibration, convergence
from benchbackcompat.report.claims.declared import DIFFERENCES, Absent, Claim, Compare, Protocol
from benchbackcompat.report.claims.premises import PREMISES
from benchbackcompat.report.columns import STATISTICS
from benchbackcompat.scenarios.kinds import kind_class

REPRODUCED, SMALLER, NOT_REPRODUCED, UNDECIDABLE = ("reproduced", "same direction, smaller effect", "not reproduced",
                                                    "undecidable")
VERDICTS = (REPRODUCED, SMALLER, NOT_REPRODUCED, UNDECIDABLE)
NOT_TESTABLE = "not testable at this scale"
UNTESTED = "untested"  # the deciding table is not in these results
DECIDING, SUPPORTING, OTHER_SETTING = "deciding", "supporting", "supporting, other setting"
ALPHA = 1.0 - bootstrap.CONFIDENCE


@dataclass(frozen=True)
class Test:
    """One comparison (or absence) on one table: the estimate of a − b (or of X), its interval at the plain level,
    the exact test's p-value, and its verdict; ``reason`` says why it is undecidable."""

    label: str
    verdict: str
    reason: str = ""
    shown: str = ""  # the compared rows' values
    estimate: float = float("nan")
    interval: tuple[float, float] = (float("nan"), float("nan"))
    p: float = float("nan")  # exact two-sided p against 0 (above) or the margin (absence)
    target: float = 0.0  # the declared effect, or the margin
    seeds: tuple[int, ...] = ()
    digits: int = 3
    settled_by: str = ""  # the row, with all its declared seeds, whose values alone leave the test undecidable


@dataclass
class Finding:
    """A claim on one table: its role, the setting differences, the verdict and the tests it rests on."""

    table: Table
    role: str
    verdict: str
    tests: list[Test] = field(default_factory=list)
    reason: str = ""
    differences: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    condition: str = ""  # ", training not converged" and the like: what the verdict is conditional on


@dataclass
class Judgement:
    """A claim's outcome: its verdict (from the deciding table, else why there is none) and every finding."""

    claim: Claim
    verdict: str
    reason: str
    findings: list[Finding]

    @property
    def deciding(self) -> Finding | None:
        return next((f for f in self.findings if f.role == DECIDING), None)


# ------------------------------------------------------------------ the protocol and the setting
def resolved_protocol(kind: str, config: dict[str, Any], metrics: Sequence[str]) -> dict[str, Any]:
    """The protocol of a scenario's resolved configuration (the kind's defaults where a field is not stored)."""
    fields = kind_class(kind).model_fields
    def default(name: str) -> Any:
        return fields[name].default if name in fields else None

    return {"kind": kind, "protocol": config.get("protocol", default("protocol")),
            "eval_split": config.get("eval_split", default("eval_split")),
            "classes": config.get("eval_classes", default("eval_classes") or "all"), "metrics": list(metrics)}


def protocol_metric(protocol: Protocol, found: dict[str, Any]) -> str | None:
    """The claim's metric under the resolved protocol ``found``; ``None`` when it is not the claim's protocol."""
    if (found["kind"], found["eval_split"], found["classes"]) != (protocol.kind, protocol.eval_split, protocol.classes):
        return None
    return next((m for p, m in protocol.retrieval if p == found["protocol"] and m in found["metrics"]), None)


def table_metric(protocol: Protocol, table: Table) -> str | None:
    return protocol_metric(protocol, resolved_protocol(table.kind, table.config, table.metrics))


def setting_differences(protocol: Protocol, table: Table, metric: str) -> list[str]:
    """How ``table``'s setting differs from the claim's: models (tasks), dataset, architecture change, pretraining."""
    found = []
    record = next((r for row in table.rows for r in row.finished), None)
    if record is None:
        return found
    models = len(record.matrices.get(metric) or [])
    if protocol.models and models != protocol.models:
        found.append(f"{models} models, the paper's {protocol.models}")
    if protocol.datasets and table.dataset not in protocol.datasets:
        found.append(f"dataset {table.dataset}, the paper's {protocol.datasets[0]}")
    backbones = list(dict.fromkeys(step.get("backbone") for step in record.steps if step.get("backbone")))
    if protocol.architecture == "same" and len(backbones) > 1:
        found.append(f"architecture {' -> '.join(backbones)}, the paper's the same for every model")
    elif protocol.architecture != "same" and len(backbones) < 2:
        found.append(f"one architecture, the paper's {protocol.architecture}")
    if protocol.pretrained and not any(step.get("pretrained") for step in record.steps):
        found.append(f"no pretrained model, the paper's {protocol.pretrained}")
    return found


# ------------------------------------------------------------------ rows and their samples
def find_row(table: Table, method: str, params: dict[str, Any]) -> tuple[Row | None, str]:
    """The row of ``method`` with ``params``, or why there is none: no such row, or several settings of the method
    and ``params`` names none of them (records do not say which one is the default)."""
    rows = matching_rows(table, method, params)
    if len(rows) == 1:
        return rows[0], ""
    if not rows:
        return None, f"{pick_name(method, params)} not run here"
    return None, f"{len(rows)} settings of {method} here ({', '.join(r.label for r in rows)}); the claim names none"


def matching_rows(table: Table, method: str, params: dict[str, Any]) -> list[Row]:
    """The rows of ``method`` whose hyperparameters include ``params``."""
    return [r for r in table.rows if r.method == method and all(r.params.get(k) == v for k, v in params.items())]


def pick_name(method: str, params: dict[str, Any]) -> str:
    return method + "".join(f" ({k}={v})" for k, v in params.items())


def restricted(sample: bootstrap.SeedSample, seeds: Sequence[int]) -> bootstrap.SeedSample:
    """``sample`` on the seeds of ``seeds`` it holds (in that order)."""
    kept = [sample.seeds.index(s) for s in seeds if s in sample.seeds]
    return bootstrap.SeedSample(tuple(sample.seeds[i] for i in kept), sample.values[kept], sample.replicates[kept])


def declared_stat(stat: Stat | None, sample: bootstrap.SeedSample) -> Stat | None:
    """``stat`` on the seeds of ``sample`` (the declared ones): the values shown beside a test are those it judges."""
    if stat is None or not len(sample.seeds):
        return None
    return Stat(tuple(float(v) for v in sample.values), sample, stat.bounds)


def cell_sample(row: Row, metric: str, statistic: str,
                seeds: Sequence[int]) -> tuple[bootstrap.SeedSample | None, str, Stat | None]:
    """A row's statistic on the declared ``seeds`` it holds as a seed sample, or why there is none;
    ``cross-old_self`` is the row's paired difference."""
    if statistic in DIFFERENCES:
        left, right = (cell_sample(row, metric, name, seeds) for name in DIFFERENCES[statistic])
        if left[0] is None or right[0] is None:
            return None, left[1] or right[1], None
        return left[0] - right[0], "", None
    if statistic == "p_com":
        return p_com_sample(row, metric, seeds)
    cell = row.cells.get(f"{metric}:{statistic}")
    if isinstance(cell, Missing):
        return None, f"{statistic} missing for {row.label}: {cell.word}", None
    return _declared(row, statistic, cell, seeds)


def p_com_sample(row: Row, metric: str, seeds: Sequence[int]) -> tuple[bootstrap.SeedSample | None, str, Stat | None]:
    """P_com on the declared ``seeds``, shown only where the update it divides by is readable over those same seeds
    (``aggregate.undecidable_update``); the table's cell gates over every stored seed, which may be more."""
    declared = [record for record in row.finished if record.seed in seeds]
    if not declared:
        return None, f"none of the declared seeds finished for {row.label}", None
    hidden = undecidable_update(gain_stat(declared, metric, gain_replicates(declared, [metric])))
    if hidden is not None:
        return None, f"P_com not shown for {row.label} on the declared seeds: {hidden.reason.split(': ', 1)[1]}", None
    cell = row.cells.get(f"{metric}:p_com")
    if not isinstance(cell, Stat):  # hidden over every stored seed, readable over the declared ones
        cell = records_stat(declared, metric, "p_com")
    return _declared(row, "p_com", cell, seeds)


def _declared(row: Row, statistic: str, cell: Stat | Missing | None,
              seeds: Sequence[int]) -> tuple[bootstrap.SeedSample | None, str, Stat | None]:
    if not isinstance(cell, Stat):
        return None, f"{statistic} missing for {row.label}", None
    if not isinstance(cell.replicates, bootstrap.SeedSample):
        return None, f"no per-query outcomes stored for {row.label}", cell
    sample = restricted(cell.replicates, seeds)
    return sample, "", declared_stat(cell, sample)


def value_text(stat: Stat | None, digits: int) -> str:
    if stat is None:
        return "not shown"
    interval = stat.interval
    return f"{stat.mean:.{digits}f}" + (f" [{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]" if interval else "")


# ------------------------------------------------------------------ one comparison
def decide(sample: bootstrap.SeedSample, target: float, plain: float, corrected: float, absence: bool,
           bounds: tuple[float, float] | None = None) -> tuple[str, str, tuple[float, float], float]:
    """The verdict of one comparison from its seed sample: (verdict, reason, plain interval, exact p).
    ``plain``: the level at which it holds; ``corrected``: the level at which it fails (Bonferroni where any single
    failure decides); ``absence``: it holds below ``target`` (the margin) instead of above 0 and ``target``."""
    seeds = len(sample.seeds)
    low, high = bootstrap.interval(sample, 1.0 - plain, bounds)
    c_low, c_high = bootstrap.interval(sample, 1.0 - corrected, bounds)
    mean = float(np.mean(sample.values))
    if not (np.isfinite(low) and np.isfinite(high)):
        return UNDECIDABLE, "no interval (the statistic is undefined on the resamples)", (low, high), float("nan")
    p_target = sign_flip_p(sample.values, target)
    if absence:
        if high < target and p_target <= plain:
            return REPRODUCED, "", (low, high), p_target
        if c_low > target and p_target <= corrected:
            return NOT_REPRODUCED, "", (low, high), p_target
        return UNDECIDABLE, _why(low, high, target, p_target, plain, seeds, "the margin"), (low, high), p_target
    p_zero = sign_flip_p(sample.values, 0.0)
    if low > 0 and p_zero <= plain:
        return (REPRODUCED if mean >= target else SMALLER), "", (low, high), p_zero
    if c_high < target and p_target <= corrected:
        return NOT_REPRODUCED, "", (low, high), p_target
    level = plain if low > 0 or high >= target else corrected
    return UNDECIDABLE, _why(low, high, target, p_zero if low > 0 else p_target, level, seeds,
                             "0 and the declared effect"), (low, high), p_zero


def _why(low: float, high: float, target: float, p: float, level: float, seeds: int, spans: str) -> str:
    if smallest_p(seeds) > level:
        return (f"the exact test cannot reach p ≤ {level:.3g} with {seeds} seeds (at best {smallest_p(seeds):.3g}; "
                f"{seeds_to_reach(level)} needed)")
    if p > level and (low > 0 or high < target):
        return f"the interval decides but the exact test does not (p = {p:.3g} > {level:.3g})"
    return f"the interval spans {spans}"


def compare_test(table: Table, metric: str, entry: Compare, seeds: Sequence[int], corrected: float) -> Test:
    digits = STATISTICS[entry.statistic].digits if entry.statistic in STATISTICS else 2
    b_statistic = entry.b_statistic or entry.statistic
    a_name, b_name = pick_name(entry.a, entry.a_params), pick_name(entry.b, entry.b_params)
    label = (f"{a_name} {entry.statistic} − {b_statistic}" if entry.b_statistic
             else f"{a_name} − {b_name} ({entry.statistic})")
    (a_row, a_why), (b_row, b_why) = find_row(table, entry.a, entry.a_params), find_row(table, entry.b, entry.b_params)
    if a_row is None or b_row is None:
        return Test(label, UNDECIDABLE, a_why or b_why, digits=digits)
    if chance := [r for r in (a_row, b_row) if r.chance]:
        return Test(label, UNDECIDABLE, f"{', '.join(dict.fromkeys(r.label for r in chance))} at chance level",
                    digits=digits, settled_by=_complete(chance, seeds))
    (a, a_why, a_stat), (b, b_why, b_stat) = (cell_sample(a_row, metric, entry.statistic, seeds),
                                              cell_sample(b_row, metric, b_statistic, seeds))
    shown = (f"{a_name}{' ' + entry.statistic if entry.b_statistic else ''} {value_text(a_stat, digits)} vs "
             f"{b_name}{' ' + b_statistic if entry.b_statistic else ''} {value_text(b_stat, digits)}"
             if a_stat is not None or b_stat is not None else "")
    if a is None or b is None:
        return Test(label, UNDECIDABLE, a_why or b_why, shown, target=entry.effect, digits=digits,
                    settled_by=_complete([row for row, x in ((a_row, a), (b_row, b)) if x is None], seeds))
    return _sample_test(label, shown, a - b, seeds, entry.effect, corrected,
                        False, None, digits)


def absence_test(table: Table, metric: str, entry: Absent, seeds: Sequence[int], corrected: float) -> Test:
    statistic = STATISTICS.get(entry.statistic)
    digits = statistic.digits if statistic else 2
    name = pick_name(entry.method, entry.params)
    label = f"{name} {entry.statistic} below {entry.margin:g}"
    row, why = find_row(table, entry.method, entry.params)
    if row is None:
        return Test(label, UNDECIDABLE, why, digits=digits)
    if row.chance:
        return Test(label, UNDECIDABLE, f"{row.label} at chance level", digits=digits,
                    settled_by=_complete([row], seeds))
    sample, why, stat = cell_sample(row, metric, entry.statistic, seeds)
    if sample is None:
        return Test(label, UNDECIDABLE, why, target=entry.margin, digits=digits, settled_by=_complete([row], seeds))
    shown = f"{name} {entry.statistic} {value_text(stat, digits)}" if stat else ""
    return _sample_test(label, shown, sample, seeds, entry.margin, corrected, True,
                        statistic.bounds if statistic else None, digits)


def _complete(rows: Sequence[Row], seeds: Sequence[int]) -> str:
    """The first of ``rows`` that holds a record at every declared seed ("" when none does): a test it leaves
    undecidable stays so whatever the other rows' missing seeds give."""
    return next((row.label for row in rows if _seeds_held(row, len(seeds)) == len(seeds)), "")


def _sample_test(label: str, shown: str, sample: bootstrap.SeedSample, seeds: Sequence[int], target: float,
                 corrected: float, absence: bool, bounds: tuple[float, float] | None, digits: int) -> Test:
    if len(sample.seeds) < len(seeds):
        missing = sorted(set(seeds) - set(sample.seeds))
        return Test(label, UNDECIDABLE, f"{len(sample.seeds)} of the {len(seeds)} declared seeds finished (missing: "
                    f"{', '.join(map(str, missing))})", shown, float(np.mean(sample.values)) if len(sample.seeds) else
                    float("nan"), target=target, seeds=sample.seeds, digits=digits)
    verdict, reason, interval, p = decide(sample, target, ALPHA, corrected, absence, bounds)
    return Test(label, verdict, reason, shown, float(np.mean(sample.values)), interval, p, target, sample.seeds, digits)


def combine(tests: Sequence[Test]) -> tuple[str, str]:
    """All must hold: reproduced when every test is, smaller effect when every test holds in direction, not
    reproduced when any fails (each failure already decided at the corrected level), else undecidable."""
    verdicts = [t.verdict for t in tests]
    if NOT_REPRODUCED in verdicts:
        return NOT_REPRODUCED, ""
    if all(v == REPRODUCED for v in verdicts):
        return REPRODUCED, ""
    if all(v in (REPRODUCED, SMALLER) for v in verdicts):
        return SMALLER, ""
    undecided = [t for t in tests if t.verdict == UNDECIDABLE]
    reasons = list(dict.fromkeys(t.reason for t in undecided))
    return UNDECIDABLE, "; ".join(reasons[:3]) + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")


# ------------------------------------------------------------------ a claim on a table, and on all of them
def premise_check(claim: Claim, table: Table, metric: str, seeds: Sequence[int]) -> tuple[bool, list[str]]:
    """Each compared row's premise with its t-interval over the declared seeds: (all hold, one line per row)."""
    premise = PREMISES[claim.premise]
    rows = {pick_name(m, p): find_row(table, m, p)[0] for m, p in compared_rows(claim)}
    holds, lines = True, []
    for name, row in rows.items():
        if row is None:
            continue
        values = premise.measure(row, metric)
        kept = [values[s] for s in seeds if s in values]
        if len(kept) < 2:
            holds = False
            lines.append(f"premise, {premise.statement}: {name} not measurable ({len(kept)} seeds with a run of fine-tuning)")
            continue
        mean = float(np.mean(kept))
        half = float(stats.t.ppf(1 - ALPHA / 2, len(kept) - 1) * np.std(kept, ddof=1) / np.sqrt(len(kept)))
        state = "yes" if mean - half > premise.threshold else "no" if mean + half < premise.threshold else "not shown"
        holds &= state == "yes"
        lines.append(f"premise, {premise.statement}: {name} {state} ({mean:+.2f} [{mean - half:+.2f}, {mean + half:+.2f}] "
                     f"{premise.unit} over {len(kept)} seeds, above {premise.threshold:g} needed)")
    return holds, lines


SATURATED = 95.0  # a self-test above this (%) leaves a later model little room to beat it (AC counts strict wins)


def saturation(claim: Claim, table: Table, metric: str, seeds: Sequence[int]) -> str:
    """Whether the compared rows' self-tests (matrix diagonal and reference) stay at most 95% on the declared seeds:
    near 100% a later model can hardly beat its gallery's self-test, which biases compatibility statistics down."""
    above = []
    for method, params in compared_rows(claim):
        row, _ = find_row(table, method, params)
        tests = [] if row is None else [
            value for record in row.finished if record.seed in seeds for matrix in [record.matrices.get(metric) or []]
            for value in [*(matrix[t][t] for t in range(len(matrix))),
                          getattr(record.metrics.get(metric), "reference_self", None)] if value is not None]
        if high := [v for v in tests if v > SATURATED]:
            above.append(f"{pick_name(method, params)} {len(high)} of {len(tests)} (up to {max(high):.1f})")
    return f"self-tests at most {SATURATED:g}%: " + ("no, " + ", ".join(above) if above else "yes")


def compared_rows(claim: Claim) -> list[tuple[str, dict[str, Any]]]:
    rows = [(e.a, e.a_params) for e in claim.compare] + [(e.b, e.b_params) for e in claim.compare]
    rows += [(e.method, e.params) for e in claim.absent]
    unique: dict[str, tuple[str, dict[str, Any]]] = {}
    for method, params in rows:
        unique.setdefault(pick_name(method, params), (method, params))
    return list(unique.values())


def judge_table(claim: Claim, table: Table, metric: str, role: str, calibrations: Sequence[Calibration] = ()) -> Finding:
    seeds = list(range(claim.seeds))
    corrected = ALPHA / claim.comparisons
    tests = [compare_test(table, metric, e, seeds, corrected) for e in claim.compare]
    tests += [absence_test(table, metric, e, seeds, corrected) for e in claim.absent]
    verdict, reason = combine(tests)
    checked = [f"seeds: the {claim.seeds} declared (0-{claim.seeds - 1}); a later seed is never used"]
    if claim.comparisons > 1:
        checked.append(f"multiplicity: {claim.comparisons} comparisons, each must hold: each at the {bootstrap.CONFIDENCE:.0%} "
                       f"level; a single failure decides at the Bonferroni level ({100 * (1 - corrected):.4g}%)")
    checked.append(saturation(claim, table, metric, seeds))
    if claim.premise:
        holds, lines = premise_check(claim, table, metric, seeds)
        checked += lines
        if not holds and verdict != UNDECIDABLE:
            verdict, reason = UNDECIDABLE, "premise not shown: " + PREMISES[claim.premise].statement
    methods = tuple(dict.fromkeys(m for m, _ in compared_rows(claim)))
    converged = convergence(calibrations, table.dataset, table.preset, table.scenario, methods, training_length(table))
    checked.append(converged)
    condition = ""
    if verdict != UNDECIDABLE:
        state = converged.removeprefix("training converged: ").split(" ", 1)[0]
        condition = {"yes": "", "no": ", training not converged", "undecidable": ", convergence undecided"}.get(
            state, ", convergence not measured")
    return Finding(table, role, verdict, tests, reason, checked=checked, condition=condition)


def training_length(table: Table) -> tuple[int, int] | None:
    """The table's (train.epochs, train.min_steps), which its calibration must have started from."""
    train = table.config.get("train")
    return (train["epochs"], train.get("min_steps", 0)) if isinstance(train, dict) and "epochs" in train else None


def judge(claim: Claim, tables: Sequence[Table], calibrations: Sequence[Calibration] = ()) -> Judgement:
    """The claim on every table of its protocol that holds one of its rows; its verdict is the deciding table's."""
    if not claim.comparisons:  # a setting this scale cannot run, declared without rows to compare
        return Judgement(claim, NOT_TESTABLE, claim.not_testable, [])
    candidates = []
    for table in tables:
        metric = table_metric(claim.protocol, table)
        if metric is not None:
            candidates.append((table, metric, setting_differences(claim.protocol, table, metric)))
    deciding, why_none = deciding_table(claim, candidates)
    findings = []
    for table, metric, differences in candidates:
        if table is not deciding and all(find_row(table, m, p)[0] is None for m, p in compared_rows(claim)):
            continue  # none of the claim's rows ran in this table: it supports nothing
        role = DECIDING if table is deciding else OTHER_SETTING if differences else SUPPORTING
        finding = judge_table(claim, table, metric, role, calibrations)
        finding.differences = differences
        findings.append(finding)
    findings.sort(key=lambda f: (f.role != DECIDING, f.role, f.table.title))
    if claim.not_testable:
        return Judgement(claim, NOT_TESTABLE, claim.not_testable, findings)
    if deciding is None:
        return Judgement(claim, UNTESTED, why_none, findings)
    unfinished = unfinished_rows(claim, deciding)
    if unfinished and findings[0].tests and all(t.settled_by for t in findings[0].tests):
        settled = ", ".join(dict.fromkeys(t.settled_by for t in findings[0].tests))
        return Judgement(claim, UNDECIDABLE, f"{findings[0].reason}; settled by {settled} at all its declared seeds, "
                         f"which no missing record can change (its declared run is not complete: {unfinished})",
                         findings)
    if unfinished:
        return Judgement(claim, UNTESTED, f"its declared run is not complete ({unfinished})", findings)
    found = findings[0]
    return Judgement(claim, found.verdict, found.reason, findings)


def unfinished_rows(claim: Claim, table: Table) -> str:
    """The compared rows of ``table`` without a record (finished or not) at each declared seed, with how many they
    have: "" when the declared run is complete. A seed that ran and diverged is complete; its claim is judged."""
    partial, absent = [], []
    for method, params in compared_rows(claim):
        rows = matching_rows(table, method, params)
        if len(rows) > 1:
            continue  # several settings and the claim names none: judged undecidable, with that reason
        held = _seeds_held(rows[0], claim.seeds) if rows else 0
        if held == 0:
            absent.append(pick_name(method, params))
        elif held < claim.seeds:
            partial.append(f"{pick_name(method, params)} {held}")
    return "; ".join(([f"of the {claim.seeds} declared seeds: {', '.join(partial)}"] if partial else []) +
                     ([f"not run: {', '.join(absent)}"] if absent else []))


def deciding_table(claim: Claim, candidates: list[tuple[Table, str, list[str]]]) -> tuple[Table | None, str]:
    """The declared table: of the tables of scenario ``deciding`` with the values of ``deciding_config``, the one that
    holds every compared row at all its declared seeds (a table with fewer seeds never decides where several are)."""
    if claim.not_testable:
        return None, ""
    named = [c for c in candidates if c[0].scenario == claim.deciding and all(
        flatten(c[0].config).get(key) == value for key, value in claim.deciding_config.items())]
    wanted = claim.deciding + "".join(f", {k}={v}" for k, v in claim.deciding_config.items())
    if not named:
        return None, f"its deciding table ({wanted}) is not in these results"
    if len(named) > 1:
        complete = [c for c in named if all(_declared_seeds(c[0], m, p, claim.seeds) == claim.seeds
                                            for m, p in compared_rows(claim))]
        titles = ", ".join(c[0].title for c in named)
        if not complete:
            return None, (f"none of the {wanted} tables ({titles}) holds the {claim.seeds} declared seeds of every "
                          "compared row: its declared run is not complete")
        if len(complete) > 1:
            return None, (f"{len(complete)} of the {wanted} tables ({titles}) hold the {claim.seeds} declared "
                          "seeds of every compared row; name its configuration in `deciding_config`")
        named = complete
    table, _, differences = named[0]
    if differences:
        return None, f"its deciding table ({table.title}) differs from the paper's setting: {'; '.join(differences)}"
    return table, ""


def _declared_seeds(table: Table, method: str, params: dict[str, Any], seeds: int) -> int:
    """How many of the seeds 0 .. seeds-1 the row of ``method`` ran in ``table`` (finished, diverged or not
    applicable)."""
    row, _ = find_row(table, method, params)
    return 0 if row is None else _seeds_held(row, seeds)


def _seeds_held(row: Row, seeds: int) -> int:
    """How many of the seeds 0 .. seeds-1 ``row`` holds a record of (finished, diverged or not applicable)."""
    return len({r.seed for r in row.records} & set(range(seeds)))
