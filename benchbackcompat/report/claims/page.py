"""``claims.md``: the tally, one summary line per claim, then per paper each claim with its deciding table and the
tables that support it, the checks folded; the scenarios that could test a claim and hold no records; the tests of
the formulas each claim uses."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchbackcompat.report.aggregate import Table
from benchbackcompat.report.calibration import Calibration
from benchbackcompat.report.claims.declared import Claim, ClaimsFile
from benchbackcompat.report.claims.judge import (NOT_REPRODUCED, NOT_TESTABLE, UNDECIDABLE, UNTESTED,
                                                 VERDICTS, Finding, Judgement, Test, judge, pick_name, protocol_metric,
                                                 resolved_protocol)
from benchbackcompat.report.claims.runs import declared_runs
from benchbackcompat.report.markdown import escape

OUTCOMES = (*VERDICTS, UNTESTED, NOT_TESTABLE)
UNCHECKED = ("the protocol, the classes scored, temperature semantics, the data behind pretrained models and each "
             "method's objective as a whole")
RULES = (
    "Each claim is one statement of a paper in one setting, declared in a claims file before its rows were run: the "
    "protocol it needs, the rows it compares (the paper's own baselines), the effect it asserts (a minimum difference) "
    "and the seeds it is judged on (0 .. n-1, never more). Its verdict is that of its **deciding table**; other tables "
    "of its protocol are shown as *supporting*, or *supporting, other setting* where the number of models, the "
    "dataset, the architecture change or the pretraining differ (the difference is named), and never count. Each "
    "comparison is the paired difference over the declared seeds, with its 95% t-interval (never narrower than the "
    "query bootstrap within a seed) and the two-sided p-value of an exact sign-flip test over the seeds (with n seeds "
    "it cannot go below 2/2^n); a decision needs both. *Reproduced*: the interval above 0, the exact test below 0.05 "
    "and the estimate at least the declared effect. *Same direction, smaller effect*: the same, with the estimate "
    "below the effect. *Not reproduced*: the interval entirely below the effect and the exact test rejecting it. "
    "*Undecidable*: otherwise, or a precondition fails (a row at chance level, a declared seed diverged, P_com not "
    "shown, the premise of the paper's setting not shown by every compared row). An absence "
    "(\"X is not compatible\") is reproduced when X's interval lies below the declared margin. A claim of several "
    "comparisons holds when each holds at the 95% level; it fails when any one fails, decided at the Bonferroni "
    "level. *Untested*: the deciding table is not in these results, or its declared run is not complete (a compared "
    "row without a record at one of the declared seeds), unless every comparison is already undecidable for a row "
    "that holds all its declared seeds (e.g. its P_com not shown over them): no missing record can change that "
    "verdict. *Not testable at this scale*: the paper's setting "
    "cannot be run here, with the reason. A verdict names what it is conditional on: whether that scale's training "
    "converged (`benchbackcompat calibrate --summary`).")


@dataclass(frozen=True)
class PlannedScenario:
    """A scenario a preset defines: the page names those of the records' presets that hold no records.
    ``config``: its resolved protocol fields (protocol, eval_split, eval_classes, metrics); empty: match by kind."""

    preset: str
    scenario: str
    kind: str
    dataset: str
    config: tuple[tuple[str, object], ...] = ()

    def could_test(self, claim: Claim) -> bool:
        if not self.config:
            return self.kind == claim.protocol.kind
        config = dict(self.config)
        found = resolved_protocol(self.kind, config, list(config.get("metrics", ())))
        return protocol_metric(claim.protocol, found) is not None


def judge_files(files: Sequence[ClaimsFile], tables: Sequence[Table],
                calibrations: Sequence[Calibration] = ()) -> list[tuple[ClaimsFile, list[Judgement]]]:
    return [(file, [judge(claim, tables, calibrations) for claim in file.claim]) for file in files]


def claims_markdown(files: Sequence[ClaimsFile], tables: Sequence[Table], header: str,
                    calibrations: Sequence[Calibration] = (), planned: Sequence[PlannedScenario] = ()) -> str:
    judged = judge_files(files, tables, calibrations)
    parts = ["# Claims of the papers, tested", header, files_markdown(files), tally_markdown(judged),
             summary_markdown(judged), "## How a claim is judged\n\n" + RULES]
    presets = scenario_presets(tables, planned)
    for file, judgements in judged:
        parts.append(f"## {escape(file.paper.title)} ({escape(file.paper.venue)})")
        parts += [claim_section(j, presets.get(j.claim.deciding, "")) for j in judgements]
    parts.append(untested_scales(tables, planned, [c for f in files for c in f.claim]))
    parts.append(implementation_checks([c for f in files for c in f.claim]))
    return "\n\n".join(p for p in parts if p) + "\n"


def scenario_presets(tables: Sequence[Table], planned: Sequence[PlannedScenario]) -> dict[str, str]:
    """The preset that defines each scenario: that of its stored tables, else the first of the records' presets."""
    presets: dict[str, str] = {}
    for scenario, preset in [*((t.scenario, t.preset) for t in tables), *((p.scenario, p.preset) for p in planned)]:
        presets.setdefault(scenario, preset)
    return presets


def files_markdown(files: Sequence[ClaimsFile]) -> str:
    lines = [f"- `{escape(f.path)}`: {escape(f.paper.title)} ({escape(f.paper.venue)}), {len(f.claim)} claims"
             for f in files]
    return "Claims files (`benchbackcompat leaderboard --claims FILE`):\n\n" + "\n".join(lines)


def tally_markdown(judged: list[tuple[ClaimsFile, list[Judgement]]]) -> str:
    """One verdict per claim (its deciding table's), paper claims and variants apart."""
    rows = []
    for tally, name in (("paper", "paper claims"), ("variant", "variants the papers did not tabulate")):
        found = [j.verdict for _, judgements in judged for j in judgements if j.claim.tally == tally]
        if found:
            rows.append(f"| {name} | " + " | ".join(str(found.count(o)) for o in OUTCOMES) + f" | {len(found)} |")
    header = "| | " + " | ".join(OUTCOMES) + " | all |\n|---|" + "---:|" * (len(OUTCOMES) + 1)
    return ("## Tally\n\nOne verdict per claim, its deciding table's; supporting tables never count.\n\n" + header + "\n"
            + "\n".join(rows))


def test_text(test: Test) -> str:
    """A test's numbers: estimate, interval, declared effect (or margin) and the exact p-value."""
    if not np.isfinite(test.estimate):
        return test.shown
    d = test.digits
    interval = (f" [{test.interval[0]:.{d}f}, {test.interval[1]:.{d}f}]" if np.isfinite(test.interval[0]) else "")
    against = "margin" if " below " in test.label else "declared effect"
    exact = f"; exact p = {test.p:.3g}" if np.isfinite(test.p) else ""
    return f"{test.estimate:+.{d}f}{interval} against a {against} of {test.target:g}{exact} ({len(test.seeds)} seeds)"


def weakest(judgement: Judgement) -> Test | None:
    """The test that decides the claim's verdict: a failing one, else an undecided one, else the one nearest its
    effect."""
    finding = judgement.deciding
    if finding is None or not finding.tests:
        return None
    for verdict in (NOT_REPRODUCED, UNDECIDABLE):
        if found := [t for t in finding.tests if t.verdict == verdict]:
            return found[0]
    return min(finding.tests, key=lambda t: t.estimate - t.target if np.isfinite(t.estimate) else np.inf)


def summary_markdown(judged: list[tuple[ClaimsFile, list[Judgement]]]) -> str:
    """One line per claim: its verdict, the deciding numbers, and why where it is undecided or untested."""
    parts = ["## Summary"]
    for tally, title in (("paper", "Paper claims"), ("variant", "Variants the papers did not tabulate")):
        lines = []
        for file, judgements in judged:
            for j in judgements:
                if j.claim.tally != tally:
                    continue
                finding, test = j.deciding, weakest(j)
                line = f"- **{escape(j.claim.id)}** ({escape(file.paper.title.split(':')[0])}): {escape(j.claim.statement)}: "
                line += f"**{j.verdict}" + (escape(finding.condition) if finding else "") + "**"
                if finding is not None and j.verdict != UNTESTED:  # an incomplete declared run has no numbers yet
                    count = f"{len(finding.tests)} comparisons; weakest: " if len(finding.tests) > 1 else ""
                    numbers = test_text(test)
                    line += f" on {escape(finding.table.title)} ({count}{escape(test.label)}" + (f": {escape(numbers)})" if numbers else ")")
                if j.reason:
                    line += f"; {escape(j.reason)}"
                lines.append(line)
        if lines:
            parts.append(f"{title}:\n\n" + "\n".join(lines))
    return "\n\n".join(parts)


def claim_section(judgement: Judgement, preset: str = "") -> str:
    """The claim's declaration, its verdict and every table it is judged on; ``preset``: the one defining its
    deciding scenario, named in the commands of its declared run."""
    claim = judgement.claim
    effects = ", ".join((f"{pick_name(e.a, e.a_params)} {e.statistic} − {e.b_statistic}" if e.b_statistic else
                         f"{pick_name(e.a, e.a_params)} − {pick_name(e.b, e.b_params)} {e.statistic}") + f" ≥ {e.effect:g}"
                        for e in claim.compare)
    absences = ", ".join(f"{pick_name(e.method, e.params)} {e.statistic} below {e.margin:g}" for e in claim.absent)
    lines = [f"### {escape(claim.id)}: {escape(claim.statement)}",
             f"Source: {escape(claim.quote)}.  \nProtocol: {escape(claim.protocol.describe())}.  \n" +
             (f"Asserted effect: {escape(effects)}" if effects else f"Asserted absence: {escape(absences)}") +
             (f" ({escape(claim.effect_basis)})" if claim.effect_basis else "") + ".  \n" +
             f"Seeds declared: {claim.seeds}.  \n" +
             (f"Deciding table: {escape(claim.deciding)}" + "".join(
                 f", {escape(k)}={escape(str(v))}" for k, v in claim.deciding_config.items()) + "." if claim.deciding else "") +
             ("  \nDeclared run: " + "; then ".join(f"`{command}`" for command in declared_runs(claim, preset)) + "."
              if claim.deciding and not claim.not_testable else "") +
             (f"  \nVariant: {escape(claim.variant)}." if claim.variant else ""),
             f"**{judgement.verdict}" + (escape(judgement.deciding.condition) if judgement.deciding else "") + "**" +
             (f": {escape(judgement.reason)}" if judgement.reason else "")]
    lines += [finding_markdown(claim, f) for f in judgement.findings]
    return "\n\n".join(lines)


def finding_markdown(claim: Claim, finding: Finding) -> str:
    table = finding.table
    differences = f" ({escape('; '.join(finding.differences))})" if finding.differences else ""
    head = (f"*{finding.role}* · {escape(table.dataset)} · {escape(table.preset)} · {escape(table.title)}"
            f"{differences}: **{finding.verdict}{escape(finding.condition)}**" +
            (f" ({escape(finding.reason)})" if finding.reason else ""))
    tests = [test_line(t) for t in finding.tests]
    checked = [f"implementation: {len(claim.implementation)} tests of the formulas used (listed below); they do not "
               f"check {UNCHECKED}"] * bool(claim.implementation) + finding.checked
    return (head + "\n\n" + "\n".join(tests) + "\n\n<details><summary>What was checked</summary>\n\n" +
            "\n".join(f"- {escape(c)}" for c in checked) + "\n\n</details>")


def test_line(test: Test) -> str:
    """A test as a list item: its rows' values, its numbers (where it has an estimate), its verdict and why."""
    parts = [escape(test.shown)] if test.shown else []
    if np.isfinite(test.estimate):
        parts.append(escape(test_text(test)))
    return (f"- {escape(test.label)}" + (": " + "; ".join(parts) if parts else "") + f" → {test.verdict}" +
            (f" ({escape(test.reason)})" if test.reason else ""))


def untested_scales(tables: Sequence[Table], planned: Sequence[PlannedScenario], claims: Sequence[Claim]) -> str:
    """The section naming each planned scenario that could test a claim but holds no stored records ("" if none)."""
    stored = {(t.preset, t.scenario) for t in tables}
    rows = []
    for scenario in planned:
        ids = [c.id for c in claims if not c.not_testable and scenario.could_test(c)]
        if ids and (scenario.preset, scenario.scenario) not in stored:
            deciding = [c.id for c in claims if c.deciding == scenario.scenario]
            rows.append(f"| {escape(scenario.preset)} · {escape(scenario.scenario)} | {escape(scenario.dataset)} | "
                        f"{len(ids)} ({len(deciding)} deciding) | `benchbackcompat run --preset {scenario.preset} "
                        f"--scenario {scenario.scenario}` |")
    if not rows:
        return ""
    return ("## Not tested: scenarios of these presets without stored records\n\n"
            "The records' presets define them, and nothing was stored for them.\n\n"
            "| preset · scenario | dataset | claims of its protocol | command that stores them |\n|---|---|---|---|\n"
            + "\n".join(rows))


def implementation_checks(claims: Sequence[Claim]) -> str:
    """The section naming, per claim, the tests of the formulas its verdict uses."""
    lines = []
    for claim in claims:
        by_file: dict[str, list[str]] = {}
        for node in claim.implementation:
            path, _, test = node.partition("::")
            by_file.setdefault(path, []).append(test)
        if by_file:
            lines.append(f"- **{escape(claim.id)}**: " + "; ".join(
                f"`{path}`: " + ", ".join(f"`{test}`" for test in tests) for path, tests in by_file.items()))
    if not lines:
        return ""
    return ("## Implementation tests: what each claim's code is tested against\n\n"
            "Run one with `pytest PATH::TEST`. Each compares a formula or a compatibility metric with something "
            f"independent of the code (the paper's equation written out, a published number, a hand computation). They "
            f"do not check the choices that drive the verdicts: {UNCHECKED}.\n\n" + "\n".join(lines))

