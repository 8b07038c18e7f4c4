"""The claims pages. ``claims.md``: per paper a digest of its own-method claims (hold, hold partly, fail, undecidable,
cannot be run) with the claims about baselines named as such, the tally (one category a line), the claims declared
after part of their data, every category move, the rules, and the scenarios that could test a claim and hold no
records. ``claims/<paper>.md``: one line per claim (how many comparisons held and failed, and which decided it),
the statements left out and why, then each claim with its deciding table and the tables that support it, the checks
folded, and the tests of the formulas each claim uses."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchbackcompat.report.table_data import Table
from benchbackcompat.report.calibration import Calibration
from benchbackcompat.report.claims.declared import BLOCKERS, Claim, ClaimsFile
from benchbackcompat.report.claims.judge import (NOT_REPRODUCED, NOT_RUN, NOT_TESTABLE, REPRODUCED, SMALLER,
                                                 UNDECIDABLE, VERDICTS, Finding, Judgement, Test, b_where, judge,
                                                 pick_name, protocol_metric, resolved_protocol, table_name)
from benchbackcompat.report.claims.runs import declared_runs
from benchbackcompat.report.markdown import escape

OUTCOMES = (*VERDICTS, NOT_RUN, NOT_TESTABLE)
Judged = list[tuple[ClaimsFile, list[Judgement]]]
UNCHECKED = ("the protocol, the classes scored, temperature semantics, the data behind pretrained models and each "
             "method's objective as a whole")
RULES = (
    "Each claim is one statement of a paper in one setting, declared in a claims file (the claims declared after part "
    "of their data are listed above, with what existed when they were declared): the protocol it needs, the rows it compares (the paper's own baselines), the effect it asserts (a minimum difference) "
    "and the seeds it is judged on (0 .. n-1, never more). Its verdict is that of its **deciding table**; other tables "
    "of its protocol are shown as *supporting*, or *supporting, other setting* where the number of models, the "
    "dataset, the architecture change or the pretraining differ (the difference is named), and never count. Each "
    "comparison is the paired difference over the declared seeds, with its 95% t-interval (never narrower than the "
    "query bootstrap within a seed) and the two-sided p-value of an exact sign-flip test over the seeds (with n seeds "
    "it cannot go below 2/2^n); a decision needs both. *Reproduced*: the interval above 0, the exact test below 0.05 "
    "and the estimate at least the declared effect. *Same direction, smaller effect*: the same, with the estimate "
    "below the effect. *Not reproduced*: the interval entirely below the effect and the exact test rejecting it. "
    "*Undecidable*: otherwise, or a precondition fails (a row at chance level, a declared seed diverged, P_com not "
    "shown, the premise of the paper's setting not shown by the setting's rows, which are named; a compared method "
    "that does not show it is named beside its verdict, which its comparisons decide). An absence "
    "(\"X is not compatible\") is reproduced when X's interval lies below the declared margin. A claim of several "
    "comparisons holds when each holds at the 95% level; it fails when any one fails, decided at the Bonferroni "
    "level. *Not run yet*: the deciding table is not in these results, or its declared run is not complete (a compared "
    "row without a record at one of the declared seeds), unless every comparison is already undecidable for a row "
    "that holds all its declared seeds (e.g. its P_com not shown over them): no missing record can change that "
    "verdict; its cost is stated. *Not testable here*: the paper's setting needs data or weights that cannot be "
    "obtained offline, or GPU work (its GPU-hours stated), with the reason. A verdict names what it is conditional on: whether that scale's training "
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
                calibrations: Sequence[Calibration] = ()) -> Judged:
    return [(file, [judge(claim, tables, calibrations) for claim in file.claim]) for file in files]


def claims_pages(files: Sequence[ClaimsFile], tables: Sequence[Table], header: str,
                 calibrations: Sequence[Calibration] = (), planned: Sequence[PlannedScenario] = (),
                 judged: Judged | None = None) -> dict[str, str]:
    """The claims pages by path: ``claims.md`` (digest and tally) and ``claims/<name>.md`` per claims file;
    ``judged``: :func:`judge_files` of these files and tables, where the caller has it already."""
    judged = judge_files(files, tables, calibrations) if judged is None else judged
    parts = ["# Claims of the papers, tested", header, files_markdown(files), digest_markdown(judged),
             tally_markdown(judged), declared_after_markdown(judged), moves_markdown(judged),
             "## How a claim is judged\n\n" + RULES,
             untested_scales(tables, planned, [c for f in files for c in f.claim])]
    pages = {"claims.md": "\n\n".join(p for p in parts if p) + "\n"}
    presets = scenario_presets(tables, planned)
    for file, judgements in judged:
        paper = [f"# {escape(file.paper.title)} ({escape(file.paper.venue)}): its claims, tested", header,
                 f"[All papers: digest and tally](../claims.md) · claims file: {code(file.path)}" + study_link(file),
                 summary_markdown([(file, judgements)]), excluded_markdown(file)]
        paper += [claim_section(j, presets.get(j.claim.deciding, "")) for j in judgements]
        paper.append(implementation_checks(file.claim))
        pages[f"claims/{file.name}.md"] = "\n\n".join(p for p in paper if p) + "\n"
    return pages


def study_link(file: ClaimsFile) -> str:
    """`` · study: [its section](link)`` where the claims file names the study's section on its paper, else empty."""
    section = file.paper.study_section
    return f" · study: [the report's section on this paper]({section})" if section else ""


def scenario_presets(tables: Sequence[Table], planned: Sequence[PlannedScenario]) -> dict[str, str]:
    """The preset that defines each scenario: that of its stored tables, else the first of the records' presets."""
    presets: dict[str, str] = {}
    for scenario, preset in [*((t.scenario, t.preset) for t in tables), *((p.scenario, p.preset) for p in planned)]:
        presets.setdefault(scenario, preset)
    return presets


def code(text: object) -> str:
    """``text`` as an inline code span that no backtick inside it can close (line breaks become spaces)."""
    plain = " ".join("".join(c if c.isprintable() else " " for c in str(text)).split())
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", plain)), default=0))
    pad = " " if plain.startswith("`") or plain.endswith("`") else ""
    return f"{fence}{pad}{plain}{pad}{fence}"


def files_markdown(files: Sequence[ClaimsFile]) -> str:
    lines = [f"- [{escape(f.paper.title)} ({escape(f.paper.venue)})](claims/{f.name}.md): {len(f.claim)} claims"
             + (f", {len(f.excluded)} statement{'s' * (len(f.excluded) != 1)} left out with the reason" if f.excluded else "") + f"; {code(f.path)}"
             for f in files]
    return "Each paper's claims, in full, on its own page (claims files: `benchbackcompat leaderboard --claims FILE`):\n\n" + "\n".join(lines)


DIGEST = ((REPRODUCED, "hold"), (SMALLER, "hold partly (same direction, smaller effect)"),
          (NOT_REPRODUCED, "fail (not reproduced)"), (UNDECIDABLE, "undecidable"))


def digest_markdown(judged: Judged) -> str:
    """Per paper, five lines on the claims about its own methods, then the claims about its baselines and ablations,
    named as such."""
    parts = ["## Digest\n\nPer paper, its claims about its **own method** (the paper's claims, not the variants), "
             "then those about its baselines or ablations, which say nothing about the method."]
    for file, judgements in judged:
        own = [j for j in judgements if j.claim.tally == "paper" and j.claim.subject == "own"]
        others = [j for j in judgements if j.claim.tally == "paper" and j.claim.subject != "own"]
        methods = ", ".join(file.paper.methods) or "its method"
        lines = [f"- {name}: {_ids([j for j in own if j.verdict == verdict])}" for verdict, name in DIGEST]
        lines.append(f"- cannot be run: {_cannot(own)}")
        text = (f"### [{escape(file.paper.title.split(':')[0])}](claims/{file.name}.md): "
                f"{len(own)} claims about {escape(methods)}\n\n" + "\n".join(lines))
        if others:
            text += "\n\nAbout its baselines and ablations: " + "; ".join(
                f"{escape(j.claim.id)} ({j.claim.subject}{_absence(j)}): {j.verdict}" for j in others) + "."
        parts.append(text)
    return "\n\n".join(parts)


def _ids(judgements: Sequence[Judgement]) -> str:
    return f"{len(judgements)}" + (": " + ", ".join(escape(j.claim.id) for j in judgements) if judgements else "")


def _cannot(judgements: Sequence[Judgement]) -> str:
    """The not testable claims by what blocks them (GPU-hours summed) and the not run yet ones with their cost."""
    blocked = [j for j in judgements if j.verdict == NOT_TESTABLE]
    waiting = [j for j in judgements if j.verdict == NOT_RUN]
    by = {b: [j for j in blocked if j.claim.blocked_by == b] for b in BLOCKERS}
    gpu = sum(j.claim.gpu_hours or 0 for j in by["gpu"])
    parts = [f"{len(blocked)} not testable here" + (" (" + ", ".join(
        f"{len(found)} {b}" + (f", about {gpu:g} GPU-hours" if b == "gpu" else "") for b, found in by.items() if found)
        + ")" if blocked else "")]
    runs: dict[str, float] = {}  # claims that share a deciding table share its run: its largest stated cost
    for j in waiting:
        name = table_name(j.claim.deciding, j.claim.deciding_config)
        runs[name] = max(runs.get(name, 0.0), j.claim.core_hours or 0.0)
    hours = sum(runs.values())
    parts.append(f"{len(waiting)} not run yet" + (f" (about {hours:g} core-hours: " + ", ".join(
        escape(j.claim.id) for j in waiting) + ")" if waiting else ""))
    return "; ".join(parts)


def _absence(judgement: Judgement) -> str:
    absent = judgement.claim.absent
    return f", an absence: {', '.join(pick_name(a.method, a.params) for a in absent)} not compatible" if absent else ""


def tally_markdown(judged: Judged) -> str:
    """One verdict per claim (its deciding table's), one category a line, paper claims and variants apart; the
    not testable ones also by what blocks them."""
    columns = [(tally, name) for tally, name in (("paper", "paper claims"), ("variant", "variants the papers did not tabulate"))
               if any(j.claim.tally == tally for _, js in judged for j in js)]
    verdicts = {tally: [j for _, js in judged for j in js if j.claim.tally == tally] for tally, _ in columns}
    rows = [f"| {outcome} | " + " | ".join(str(sum(j.verdict == outcome for j in verdicts[t])) for t, _ in columns) + " |"
            for outcome in OUTCOMES]
    rows += [f"| {NOT_TESTABLE}: {meaning} | " + " | ".join(
        str(sum(j.verdict == NOT_TESTABLE and j.claim.blocked_by == b for j in verdicts[t])) for t, _ in columns) + " |"
        for b, meaning in BLOCKERS.items()]
    rows.append("| all | " + " | ".join(str(len(verdicts[t])) for t, _ in columns) + " |")
    header = "| category | " + " | ".join(name for _, name in columns) + " |\n|---|" + "---:|" * len(columns)
    return ("## Tally\n\nOne verdict per claim, its deciding table's; supporting tables never count. *Not run yet*: a "
            "setting that can be built here, with its cost; *not testable here*: data or weights that cannot be "
            "obtained offline, or GPU work.\n\n" + header + "\n" + "\n".join(rows))


def declared_after_markdown(judged: Judged) -> str:
    """The claims declared after part of their data existed ("" if none)."""
    rows = [f"| {escape(j.claim.id)} | {j.verdict} | {escape(j.claim.declared_after)} |"
            for _, js in judged for j in js if j.claim.declared_after]
    if not rows:
        return ""
    return ("## Declared after part of their data\n\nEvery other claim was declared (its seeds, effect and deciding "
            "table committed) before the first record of its deciding table. These were not:\n\n"
            "| claim | verdict | what existed when it was declared |\n|---|---|---|\n" + "\n".join(rows))


def moves_markdown(judged: Judged) -> str:
    """Every change of a claim's category, with its date and commit ("" if none)."""
    rows = [f"| {escape(j.claim.id)} | {move.date} | {move.commit or 'this revision'} | {escape(move.before)} → "
            f"{escape(move.after)} | {escape(move.why)} |"
            for _, js in judged for j in js for move in j.claim.moved]
    if not rows:
        return ""
    return ("## Category moves\n\nEach change of a claim's category, with the commit that made it.\n\n"
            "| claim | date | commit | move | why |\n|---|---|---|---|---|\n" + "\n".join(rows))


def excluded_markdown(file: ClaimsFile) -> str:
    if not file.excluded:
        return ""
    return ("## Statements left out\n\n" + "\n".join(
        f"- {escape(e.what)} ({escape(e.where)}): {escape(e.why)}" for e in file.excluded))


def test_text(test: Test) -> str:
    """A test's numbers: estimate, interval, declared effect (or margin) and the exact p-value with its null."""
    if not np.isfinite(test.estimate):
        return test.shown
    d = test.digits
    interval = (f" [{test.interval[0]:.{d}f}, {test.interval[1]:.{d}f}]" if np.isfinite(test.interval[0]) else "")
    absence = " below " in test.label
    against = "margin" if absence else "declared effect"
    exact = ""
    if np.isfinite(test.p):
        null = (f"a mean of {test.null:g} (the margin)" if absence else
                f"a mean difference of {test.null:g}" + (" (the declared effect)" if test.null else ""))
        exact = f"; exact p = {test.p:.3g} against {null}"
    return f"{test.estimate:+.{d}f}{interval} against a {against} of {test.target:g}{exact} ({len(test.seeds)} seeds)"


def decided_by(judgement: Judgement) -> tuple[list[Test], str]:
    """The tests that decide the claim's verdict (the failing ones, else the undecided ones, else those that hold
    with a smaller effect, else all) and the count of those that held, failed and stayed undecided."""
    finding = judgement.deciding
    if finding is None or not finding.tests:
        return [], ""
    tests = finding.tests
    held = sum(t.verdict in (REPRODUCED, SMALLER) for t in tests)
    failed = sum(t.verdict == NOT_REPRODUCED for t in tests)
    count = (f"{len(tests)} comparisons: {held} held, {failed} failed, {len(tests) - held - failed} undecided;"
             if len(tests) > 1 else "")
    for verdict in (NOT_REPRODUCED, UNDECIDABLE, SMALLER):
        if found := [t for t in tests if t.verdict == verdict]:
            return found, count
    return list(tests), count


def summary_markdown(judged: Judged) -> str:
    """One line per claim: its verdict, the deciding numbers, and why where it is undecided or not run."""
    parts = ["## Summary"]
    for tally, title in (("paper", "Paper claims"), ("variant", "Variants the papers did not tabulate")):
        lines = []
        for file, judgements in judged:
            for j in judgements:
                if j.claim.tally == tally:
                    lines.append(f"- **{escape(j.claim.id)}** ({escape(file.paper.title.split(':')[0])}): "
                                 f"{escape(j.claim.statement)}: {summary_text(j)}")
        if lines:
            parts.append(f"{title}:\n\n" + "\n".join(lines))
    return "\n\n".join(parts)


def summary_text(j: Judgement) -> str:
    """A claim's verdict with what decided it (Markdown)."""
    finding = j.deciding
    line = f"**{j.verdict}" + (escape(finding.condition) if finding else "") + "**"
    if j.claim.subject != "own":
        line += f" (about a {j.claim.subject}{escape(_absence(j))})"
    if j.claim.declared_after:
        line += " (declared after part of its data)"
    tests, count = decided_by(j)
    if finding is not None and j.verdict != NOT_RUN and tests:  # an incomplete declared run has no numbers yet
        first, numbers = tests[0], test_text(tests[0])
        others = f"; also {', '.join(t.label for t in tests[1:])}" if tests[1:] else ""
        line += (f" on {escape(finding.table.title)} ({escape(count) + ' ' if count else ''}decided by {escape(first.label)}" +
                 (f": {escape(numbers)}" if numbers else "") + f"{escape(others)})")
    if j.reason:
        line += f"; {escape(j.reason)}"
    if finding is not None and finding.longer:
        line += f"; longer stored runs: {escape(finding.longer)}"
    return line


def claim_section(judgement: Judgement, preset: str = "") -> str:
    """The claim's declaration, its verdict and every table it is judged on; ``preset``: the one defining its
    deciding scenario, named in the commands of its declared run."""
    claim = judgement.claim
    effects = ", ".join((f"{pick_name(e.a, e.a_params)} {e.statistic} − {e.b_statistic}" if e.b_statistic else
                         f"{pick_name(e.a, e.a_params)} − {pick_name(e.b, e.b_params)}{b_where(e)} {e.statistic}")
                        + f" ≥ {e.effect:g}" for e in claim.compare)
    absences = ", ".join(f"{pick_name(e.method, e.params)} {e.statistic} below {e.margin:g}" for e in claim.absent)
    declared = ""
    if effects or absences:
        declared = ((f"Asserted effect: {escape(effects)}" if effects else f"Asserted absence: {escape(absences)}") +
                    (f" ({escape(claim.effect_basis)})" if claim.effect_basis else "") + ".  \n")
    blocked = (f"  \nBlocked by: {BLOCKERS[claim.blocked_by]}" + (f", about {claim.gpu_hours:g} GPU-hours"
                                                                  if claim.gpu_hours else "") + "."
               if claim.blocked_by else "")
    lines = [f"### {escape(claim.id)}: {escape(claim.statement)}",
             f"Source: {escape(claim.quote)}.  \nProtocol: {escape(claim.protocol.describe())}.  \n" + declared +
             f"Seeds declared: {claim.seeds}." +
             (f"  \nPremise of the setting: {escape(claim.premise)}, measured on {escape(', '.join(claim.premise_on))}."
              if claim.premise else "") +
             (f"  \nDeciding table: {escape(table_name(claim.deciding, claim.deciding_config))}." if claim.deciding else "") +
             ("  \nDeclared run: " + "; then ".join(code(command) for command in declared_runs(claim, preset)) +
              (f" (about {claim.core_hours:g} core-hours)" if claim.core_hours else "") + "."
              if claim.deciding and not claim.not_testable else "") + blocked +
             (f"  \nDeclared after part of its data: {escape(claim.declared_after)}." if claim.declared_after else "") +
             (f"  \nVariant: {escape(claim.variant)}." if claim.variant else ""),
             f"**{judgement.verdict}" + (escape(judgement.deciding.condition) if judgement.deciding else "") + "**" +
             (f": {escape(judgement.reason)}" if judgement.reason else "") +
             (f"  \nLonger stored runs: {escape(judgement.deciding.longer)}."
              if judgement.deciding and judgement.deciding.longer else "")]
    lines += ["Category moves: " + "; ".join(f"{m.date} ({m.commit or 'this revision'}): {escape(m.before)} → "
                                               f"{escape(m.after)}, {escape(m.why)}" for m in claim.moved)] * bool(claim.moved)
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
                        f"{len(ids)} ({len(deciding)} deciding) | "
                        f"{code(f'benchbackcompat run --preset {scenario.preset} --scenario {scenario.scenario}')} |")
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
                f"{code(path)}: " + ", ".join(code(test) for test in tests) for path, tests in by_file.items()))
    if not lines:
        return ""
    return ("## Implementation tests: what each claim's code is tested against\n\n"
            "Run one with `pytest PATH::TEST`. Each compares a formula or a compatibility metric with something "
            f"independent of the code (the paper's equation written out, a published number, a hand computation). They "
            f"do not check the choices that drive the verdicts: {UNCHECKED}.\n\n" + "\n".join(lines))
