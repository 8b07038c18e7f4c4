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
  shown, the premise not shown by the setting's rows);
- *not run yet*: the deciding table is not in the results, or its declared run is not complete (a compared row
  without a record at one of the declared seeds), unless every test is already undecidable for a row that holds all
  its declared seeds (e.g. its P_com not shown): no missing record can change that, so it is *undecidable* at once;
- *not testable here*: the setting needs data or weights that cannot be obtained offline, or GPU work.

A premise of the paper's setting (e.g. IAM-CL2R's: fine-tuning improves the models pretrained elsewhere) is measured
on the rows the claim names for it (``premise_on``: the setting's, e.g. ER's fine-tuning), never on the method
judged: a compared row that does not show it is named beside the verdict ("premise not shown for X"), which its
comparisons decide.

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
from benchbackcompat.report.grouping import flatten
from benchbackcompat.report.seed_statistics import gain_replicates, gain_stat, records_stat, undecidable_update
from benchbackcompat.report.table_data import Missing, Row, Stat, Table
from benchbackcompat.report.calibration import Calibration, convergence
from benchbackcompat.report.claims.declared import DIFFERENCES, Absent, Claim, Compare, Protocol
from benchbackcompat.report.claims.premises import PREMISES
from benchbackcompat.report.columns import STATISTICS
from benchbackcompat.scenarios.kinds import kind_class

REPRODUCED, SMALLER, NOT_REPRODUCED, UNDECIDABLE = ("reproduced", "same direction, smaller effect", "not reproduced",
                                                    "undecidable")
VERDICTS = (REPRODUCED, SMALLER, NOT_REPRODUCED, UNDECIDABLE)
NOT_RUN = "not run yet"  # the deciding table is not in these results, or its declared run is not complete
NOT_TESTABLE = "not testable here"  # data or weights not obtainable offline, or GPU work
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
    p: float = float("nan")  # the exact test's two-sided p-value against ``null``
    target: float = 0.0  # the declared effect, or the margin
    null: float = float("nan")  # the mean difference (or value) the exact p is computed against
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
    longer: str = ""  # where training did not converge: what the stored longer runs of its rows say


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


def table_name(scenario: str, config: dict[str, Any]) -> str:
    return scenario + "".join(f", {k}={v}" for k, v in config.items())


def b_where(entry: Compare) -> str:
    """Where b's row comes from when it is another declared table ("" for the claim's own)."""
    return f" on {table_name(entry.b_deciding, entry.b_deciding_config)}" if entry.b_deciding else ""


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
    (``seed_statistics.undecidable_update``); the table's cell gates over every stored seed, which may be more."""
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
           bounds: tuple[float, float] | None = None) -> tuple[str, str, tuple[float, float], float, float]:
    """The verdict of one comparison from its seed sample: (verdict, reason, plain interval, exact p, its null).
    ``plain``: the level at which it holds; ``corrected``: the level at which it fails (Bonferroni where any single
    failure decides); ``absence``: it holds below ``target`` (the margin) instead of above 0 and ``target``."""
    seeds = len(sample.seeds)
    low, high = bootstrap.interval(sample, 1.0 - plain, bounds)
    c_low, c_high = bootstrap.interval(sample, 1.0 - corrected, bounds)
    mean = float(np.mean(sample.values))
    if not (np.isfinite(low) and np.isfinite(high)):
        return UNDECIDABLE, "no interval (the statistic is undefined on the resamples)", (low, high), float("nan"), 0.0
    p_target = sign_flip_p(sample.values, target)
    if absence:
        if high < target and p_target <= plain:
            return REPRODUCED, "", (low, high), p_target, target
        if c_low > target and p_target <= corrected:
            return NOT_REPRODUCED, "", (low, high), p_target, target
        why = _why(seeds, p_target, (low, high), (c_low, c_high), plain, corrected, target, "the margin",
                   holds_below=True)
        return UNDECIDABLE, why, (low, high), p_target, target
    p_zero = sign_flip_p(sample.values, 0.0)
    if low > 0 and p_zero <= plain:
        return (REPRODUCED if mean >= target else SMALLER), "", (low, high), p_zero, 0.0
    if c_high < target and p_target <= corrected:
        return NOT_REPRODUCED, "", (low, high), p_target, target
    if low > 0:  # above 0 by the interval, not by the exact test
        return UNDECIDABLE, _exact(seeds, p_zero, plain, "0"), (low, high), p_zero, 0.0
    why = _why(seeds, p_target, (low, high), (c_low, c_high), plain, corrected, target, "the declared effect",
               holds_below=False, zero=True)
    return UNDECIDABLE, why, (low, high), p_target, target


def _exact(seeds: int, p: float, level: float, against: str) -> str:
    if smallest_p(seeds) > level:
        return (f"the exact test cannot reach p ≤ {level:.3g} with {seeds} seeds (at best {smallest_p(seeds):.3g}; "
                f"{seeds_to_reach(level)} needed)")
    return f"the interval decides but the exact test against {against} does not (p = {p:.3g} > {level:.3g})"


def _why(seeds: int, p_target: float, plain: tuple[float, float], corrected_interval: tuple[float, float],
         level: float, corrected: float, target: float, name: str, holds_below: bool, zero: bool = False) -> str:
    """Why a comparison is undecided: where its plain and corrected intervals lie against the target (the margin
    of an absence, whose holding side is below it; the declared effect of a comparison, whose failing side is below
    it), and which exact test falls short."""
    (low, high), (c_low, c_high) = plain, corrected_interval
    fails_above = holds_below  # an absence fails above its margin; a comparison fails below its effect
    if holds_below and high < target:
        return _exact(seeds, p_target, level, name)
    failing = c_low > target if fails_above else c_high < target
    if failing:
        return _exact(seeds, p_target, corrected, name)
    plain_failing = low > target if fails_above else high < target
    if plain_failing and corrected < level:
        side = "above" if fails_above else "below"
        return (f"the 95% interval lies {side} {name} but its {100 * (1 - corrected):.4g}% interval "
                f"[{c_low:.3g}, {c_high:.3g}] (Bonferroni: any one failure decides) does not")
    return f"the interval spans {'0 and ' if zero else ''}{name}"


def compare_test(table: Table, metric: str, entry: Compare, seeds: Sequence[int], corrected: float,
                 b_table: Table | None = None) -> Test:
    """``b_table``: the declared table b's row comes from (``entry.b_deciding``); by default ``table``."""
    digits = STATISTICS[entry.statistic].digits if entry.statistic in STATISTICS else 2
    b_statistic = entry.b_statistic or entry.statistic
    a_name, b_name = pick_name(entry.a, entry.a_params), pick_name(entry.b, entry.b_params) + b_where(entry)
    label = (f"{a_name} {entry.statistic} − {b_statistic}" if entry.b_statistic
             else f"{a_name} − {b_name} ({entry.statistic})")
    if entry.b_deciding and b_table is None:
        return Test(label, UNDECIDABLE, f"b's declared table ({table_name(entry.b_deciding, entry.b_deciding_config)}) "
                    "is not in these results", digits=digits)
    (a_row, a_why), (b_row, b_why) = (find_row(table, entry.a, entry.a_params),
                                      find_row(b_table or table, entry.b, entry.b_params))
    if a_row is None or b_row is None:  # the row that ran may already leave it undecidable (its P_com not shown)
        ran = [(row, statistic) for row, statistic in ((a_row, entry.statistic), (b_row, b_statistic)) if row is not None]
        hidden = [(row, why) for row, statistic in ran for sample, why, _ in [cell_sample(row, metric, statistic, seeds)]
                  if sample is None]
        if hidden and (settled := _complete([row for row, _ in hidden], seeds)):
            return Test(label, UNDECIDABLE, hidden[0][1], digits=digits, settled_by=settled)
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
    verdict, reason, interval, p, null = decide(sample, target, ALPHA, corrected, absence, bounds)
    return Test(label, verdict, reason, shown, float(np.mean(sample.values)), interval, p, target, null, sample.seeds,
                digits)


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
def premise_state(premise_name: str, row: Row, metric: str, seeds: Sequence[int]) -> tuple[str, str]:
    """A row's premise over the declared seeds with its t-interval: ("yes" | "no" | "not shown", one line)."""
    premise = PREMISES[premise_name]
    values = premise.measure(row, metric)
    kept = [values[s] for s in seeds if s in values]
    if len(kept) < 2:
        return "not shown", f"{row.label} not measurable ({len(kept)} seeds with a run of fine-tuning)"
    mean = float(np.mean(kept))
    half = float(stats.t.ppf(1 - ALPHA / 2, len(kept) - 1) * np.std(kept, ddof=1) / np.sqrt(len(kept)))
    state = "yes" if mean - half > premise.threshold else "no" if mean + half < premise.threshold else "not shown"
    return state, (f"{row.label} {state} ({mean:+.2f} [{mean - half:+.2f}, {mean + half:+.2f}] {premise.unit} over "
                   f"{len(kept)} seeds, above {premise.threshold:g} needed)")


def premise_check(claim: Claim, table: Table, metric: str, seeds: Sequence[int]) -> tuple[bool, list[str], list[str]]:
    """The premise on the setting's rows (``premise_on``) and on each compared row: (the setting shows it, one line
    per row, the compared rows that do not show it)."""
    statement = PREMISES[claim.premise].statement
    holds, lines, lacking = True, [], []
    for method in claim.premise_on:
        row, why = find_row(table, method, {})
        state, line = premise_state(claim.premise, row, metric, seeds) if row is not None else ("not shown", why)
        holds &= state == "yes"
        lines.append(f"premise, {statement}, on the setting: {line}")
    for method, params in compared_rows(claim):
        row = find_row(table, method, params)[0]
        if row is None or method in claim.premise_on:
            continue
        state, line = premise_state(claim.premise, row, metric, seeds)
        if state != "yes":
            lacking.append(pick_name(method, params))
        lines.append(f"premise, {statement}, for the method: {line}")
    return holds, lines, lacking


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
    """The rows the claim compares in its deciding table (b rows of another declared table apart: ``other_rows``)."""
    rows = [(e.a, e.a_params) for e in claim.compare] + [(e.b, e.b_params) for e in claim.compare if not e.b_deciding]
    rows += [(e.method, e.params) for e in claim.absent]
    unique: dict[str, tuple[str, dict[str, Any]]] = {}
    for method, params in rows:
        unique.setdefault(pick_name(method, params), (method, params))
    return list(unique.values())


def judge_table(claim: Claim, table: Table, metric: str, role: str, calibrations: Sequence[Calibration] = (),
                b_tables: dict[str, Table] | None = None) -> Finding:
    """The claim on ``table``; ``b_tables``: the declared tables of b rows that come from another table, by
    ``table_name``."""
    seeds = list(range(claim.seeds))
    corrected = ALPHA / claim.comparisons
    tests = [compare_test(table, metric, e, seeds, corrected,
                          (b_tables or {}).get(table_name(e.b_deciding, e.b_deciding_config)) if e.b_deciding else None)
             for e in claim.compare]
    tests += [absence_test(table, metric, e, seeds, corrected) for e in claim.absent]
    verdict, reason = combine(tests)
    checked = [f"seeds: the {claim.seeds} declared (0-{claim.seeds - 1}); a later seed is never used"]
    if claim.comparisons > 1:
        checked.append(f"multiplicity: {claim.comparisons} comparisons, each must hold: each at the {bootstrap.CONFIDENCE:.0%} "
                       f"level; a single failure decides at the Bonferroni level ({100 * (1 - corrected):.4g}%)")
    checked.append(saturation(claim, table, metric, seeds))
    lacking: list[str] = []
    if claim.premise:
        holds, lines, lacking = premise_check(claim, table, metric, seeds)
        checked += lines
        if not holds and verdict != UNDECIDABLE:
            verdict, reason = UNDECIDABLE, ("premise of the setting not shown (on " + ", ".join(claim.premise_on) +
                                            "): " + PREMISES[claim.premise].statement)
    methods = tuple(dict.fromkeys(m for m, _ in compared_rows(claim)))
    converged = convergence(calibrations, table.dataset, table.preset, table.scenario, methods, training_length(table))
    checked.append(converged)
    condition = ""
    if verdict != UNDECIDABLE:
        state = converged.removeprefix("training converged: ").split(" ", 1)[0]
        condition = {"yes": "", "no": ", training not converged", "undecidable": ", convergence undecided"}.get(
            state, ", convergence not measured")
    if lacking and not reason.startswith("premise of the setting"):
        condition += f", premise not shown for {', '.join(lacking)}"
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
    two_tables = any(e.b_deciding for e in claim.compare)
    b_tables = {table_name(e.b_deciding, e.b_deciding_config): table for e in claim.compare if e.b_deciding
                for table in [declared_table(tables, e.b_deciding, e.b_deciding_config)] if table is not None}
    findings = []
    for table, metric, differences in candidates:
        if table is not deciding and (two_tables or all(find_row(table, m, p)[0] is None for m, p in compared_rows(claim))):
            continue  # none of the claim's rows ran in this table (or its b rows come from a declared table only)
        role = DECIDING if table is deciding else OTHER_SETTING if differences else SUPPORTING
        finding = judge_table(claim, table, metric, role, calibrations, b_tables)
        finding.differences = differences
        findings.append(finding)
    findings.sort(key=lambda f: (f.role != DECIDING, f.role, f.table.title))
    if claim.not_testable:
        return Judgement(claim, NOT_TESTABLE, claim.not_testable, findings)
    cost = f"; its declared run costs about {claim.core_hours:g} core-hours" if claim.core_hours else ""
    if deciding is None:
        return Judgement(claim, NOT_RUN, why_none + cost, findings)
    unfinished = "; ".join(filter(None, [unfinished_rows(claim, deciding), *(
        unfinished_rows(claim, b_tables[name], name) if name in b_tables else f"{name}: not in these results"
        for name in dict.fromkeys(table_name(e.b_deciding, e.b_deciding_config) for e in claim.compare if e.b_deciding))]))
    if unfinished and findings[0].tests and all(t.settled_by for t in findings[0].tests):
        settled = ", ".join(dict.fromkeys(t.settled_by for t in findings[0].tests))
        return Judgement(claim, UNDECIDABLE, f"{findings[0].reason}; settled by {settled} at all its declared seeds, "
                         f"which no missing record can change (its declared run is not complete: {unfinished})",
                         findings)
    if unfinished:
        return Judgement(claim, NOT_RUN, f"its declared run is not complete ({unfinished}){cost}", findings)
    found = findings[0]
    if found.condition.startswith(", training not converged"):
        found.longer = longer_runs(claim, found, candidates, calibrations)
    return Judgement(claim, found.verdict, found.reason, findings)


def longer_runs(claim: Claim, found: Finding, candidates: list[tuple[Table, str, list[str]]],
                calibrations: Sequence[Calibration]) -> str:
    """Whether the stored runs of the deciding scenario trained longer keep each comparison on the side of its
    target (the declared effect or margin, and 0) where the deciding table put it, on the seeds they hold."""
    length = training_length(found.table)
    longer = [(t, m) for t, m, _ in candidates if t.scenario == found.table.scenario and t is not found.table
              and length is not None and (other := training_length(t)) is not None
              and (other[0] > length[0] or other[1] > length[1])]
    if not longer:
        return "no longer run of its rows is stored"
    texts = []
    for table, metric in longer:
        held = sorted({r.seed for row in table.rows for r in row.finished} & set(range(claim.seeds)))
        other = judge_table(claim, table, metric, SUPPORTING, calibrations)
        kept = [_same_side(a, b) for a, b in zip(found.tests, other.tests)]
        known = [k for k in kept if k is not None]
        texts.append(f"{table.title} ({len(held)} of the declared seeds): " + (
            "no comparison measurable" if not known else
            f"{sum(known)} of {len(known)} comparisons keep the side of their target" +
            ("" if all(known) else "; " + ", ".join(t.label for t, k in zip(found.tests, kept) if k is False) + " do not")))
    return "; ".join(texts)


def _same_side(test: Test, other: Test) -> bool | None:
    """Whether ``other``'s estimate lies on the same side of 0 and of the target as ``test``'s (None: not measured)."""
    if not (np.isfinite(test.estimate) and np.isfinite(other.estimate)):
        return None
    return all((test.estimate >= level) == (other.estimate >= level) for level in {0.0, test.target})


def unfinished_rows(claim: Claim, table: Table, where: str = "") -> str:
    """The compared rows of ``table`` without a record (finished or not) at each declared seed, with how many they
    have: "" when the declared run is complete. A seed that ran and diverged is complete; its claim is judged.
    ``where``: the name of another declared table, whose b rows are checked instead."""
    rows = ([(e.b, e.b_params) for e in claim.compare if e.b_deciding and table_name(e.b_deciding, e.b_deciding_config)
             == where] if where else compared_rows(claim))
    partial, absent = [], []
    for method, params in rows:
        matching = matching_rows(table, method, params)
        if len(matching) > 1:
            continue  # several settings and the claim names none: judged undecidable, with that reason
        held = _seeds_held(matching[0], claim.seeds) if matching else 0
        if held == 0:
            absent.append(pick_name(method, params))
        elif held < claim.seeds:
            partial.append(f"{pick_name(method, params)} {held}")
    prefix = f"{where}: " if where else ""
    return "; ".join(([f"{prefix}of the {claim.seeds} declared seeds: {', '.join(partial)}"] if partial else []) +
                     ([f"{prefix}not run: {', '.join(absent)}"] if absent else []))


def declared_table(tables: Sequence[Table], scenario: str, config: dict[str, Any]) -> Table | None:
    """The one table of ``scenario`` with the values of ``config`` (None where there is none, or several)."""
    named = [t for t in tables if t.scenario == scenario and all(flatten(t.config).get(k) == v for k, v in config.items())]
    return named[0] if len(named) == 1 else None


def deciding_table(claim: Claim, candidates: list[tuple[Table, str, list[str]]]) -> tuple[Table | None, str]:
    """The declared table: of the tables of scenario ``deciding`` with the values of ``deciding_config``, the one that
    holds every compared row at all its declared seeds (a table with fewer seeds never decides where several are)."""
    if claim.not_testable:
        return None, ""
    named = [c for c in candidates if c[0].scenario == claim.deciding and all(
        flatten(c[0].config).get(key) == value for key, value in claim.deciding_config.items())]
    wanted = table_name(claim.deciding, claim.deciding_config)
    if not named:
        return None, f"its deciding table ({wanted}) is not in these results"
    if len(named) > 1:
        complete = [c for c in named if all(_declared_seeds(c[0], m, p, claim.seeds) == claim.seeds
                                            for m, p in compared_rows(claim))]
        titles = ", ".join(c[0].title for c in named)
        held = [sum(_declared_seeds(c[0], m, p, claim.seeds) for m, p in compared_rows(claim)) for c in named]
        if not complete and held.count(max(held)) == 1:  # the declared run in progress: the table holding most of it
            complete = [named[held.index(max(held))]]
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
