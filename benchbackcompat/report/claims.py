"""The claims report: each paper's claim as a test on the stored records, with the paper's numbers, ours with
95% intervals, and a verdict.

A claim compares rows of a leaderboard table ("A's AC above B's"). The verdict comes from the paired
bootstrap interval of the difference (``metrics.bootstrap``): *reproduced* when it lies above zero,
*not reproduced* when it lies at or below zero, *undecidable at this scale* when it contains zero, when a
row is missing, is at chance level, has no per-query outcomes, or when P_com is not decidable because the
update it divides by is too small. What was checked is listed with every verdict.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from benchbackcompat.metrics import bootstrap
from benchbackcompat.report.aggregate import Missing, Row, Stat, Table
from benchbackcompat.report.calibration import Calibration, convergence
from benchbackcompat.report.markdown import escape

REPRODUCED, NOT_REPRODUCED, UNDECIDABLE = "reproduced", "not reproduced", "undecidable at this scale"
NOT_RUN = "not run"  # the finding of a table that lacks a compared method
HYPERBOLIC = ("hbct", "hbct-no-entail")
NOT_COMPATIBILITY_METHODS = ("independent",)  # trained without any compatibility term
SATURATED = 95.0  # a self-test above this (%) leaves a later model little room to beat it


@dataclass(frozen=True)
class Pick:
    """A row of a table: a method, optionally with hyperparameters (e.g. HOC with lam = 1)."""

    method: str
    params: tuple[tuple[str, object], ...] = ()

    @property
    def name(self) -> str:
        return self.method + "".join(f" ({k}={v})" for k, v in self.params)

    def find(self, table: Table) -> Row | None:
        """The matching row; ``None`` when there is none, or when the pick names no hyperparameters and the
        table holds several settings of the method (records do not say which one is the default)."""
        rows = [r for r in table.rows if r.method == self.method and all(r.params.get(k) == v for k, v in self.params)]
        return rows[0] if len(rows) == 1 else None

    def not_found(self, table: Table) -> str:
        """Why :meth:`find` found no row, for the report's "what was checked"."""
        settings = [r.label for r in table.rows if r.method == self.method]
        if len(settings) > 1:
            return f"records: {len(settings)} settings of {self.method} here ({', '.join(settings)}); the claim names none"
        return f"records: no {self.name} in this table"


@dataclass
class Finding:
    verdict: str
    ours: str
    checked: list[str] = field(default_factory=list)
    methods: tuple[str, ...] = ()  # the methods the verdict rests on: whose training convergence matters


@dataclass(frozen=True)
class Claim:
    """``implementation``: the tests (``path::function``) that exclude a bug behind the verdict, each checking an
    objective or metric against something independent of it (the paper's equation written out, a published
    number, a hand computation)."""

    paper: str
    statement: str
    paper_numbers: str
    kinds: tuple[str, ...]
    test: Callable[[Table], Finding]
    implementation: tuple[str, ...] = ()


STATIONARY = "plugins/bbc_stationary/tests/test_stationary_methods.py::"
COMPAT = "plugins/bbc_compat/tests/test_compat_losses.py::"
HYPERBOLIC_TESTS = "plugins/bbc_hyperbolic/tests/test_hbct.py::"
OUTPUTS = "plugins/bbc_outputs/tests/test_psp_lsp.py::"
BASELINES = "tests/test_baseline_objectives.py::"
COMPATIBILITY = "tests/test_metrics_compatibility.py::"
AC_TESTS = (COMPATIBILITY + "test_hoc_notebook_matrix_t7", COMPATIBILITY + "test_t2_tie_is_incompatible_only_when_strict")
HOC_TESTS = (STATIONARY + "test_hoc_alignment_matches_its_equation", STATIONARY + "test_hoc_total_loss_weights_and_reference",
             STATIONARY + "test_hoc_model_has_a_fixed_unit_dsimplex_without_gradient_or_weight_decay",
             STATIONARY + "test_iam_label_reversal_and_preallocation")
P_COM_TESTS = (COMPATIBILITY + "test_p_up_and_p_com_hbct_table1",)
HBCT_TESTS = (HYPERBOLIC_TESTS + "test_loss_is_ce_plus_lambda_entail_plus_contrast_and_the_ablation_drops_entail",
              HYPERBOLIC_TESTS + "test_lorentz_mlr_logit_is_the_signed_distance_to_the_class_hyperplane",
              HYPERBOLIC_TESTS + "test_rince_at_q_one_by_hand_and_per_sample_q",
              HYPERBOLIC_TESTS + "test_zeta_grows_by_0_2_per_update_and_bounds_the_tangent_norm")


def _cell(table: Table, row: Row, statistic: str) -> tuple[Stat | Missing | None, str]:
    metric = table.columns[0].metric
    return row.cells.get(f"{metric}:{statistic}"), metric


def _text(stat: Stat, digits: int) -> str:
    text = f"{stat.mean:.{digits}f}"
    if stat.interval is not None:
        text += f" [{stat.interval[0]:.{digits}f}, {stat.interval[1]:.{digits}f}]"
    return text


def compare(table: Table, a: Pick, b: Pick | Callable[[Table], Pick | None], statistic: str) -> Finding:
    """Whether ``a``'s ``statistic`` is significantly above ``b``'s (paired bootstrap of the difference)."""
    b = b(table) if callable(b) else b
    digits = 3 if statistic in ("AC", "p_com", "p_up") else 2
    if b is None:
        return Finding(UNDECIDABLE, "no row to compare with", ["records: the compared methods were not run here"])
    rows = {p.name: p.find(table) for p in (a, b)}
    missing = [p for p in (a, b) if rows[p.name] is None]
    if missing:
        return Finding(UNDECIDABLE, NOT_RUN, [p.not_found(table) for p in missing])
    checked = [f"records: {len(r.finished)} seed(s) of {name}" for name, r in rows.items()]
    chance = [name for name, r in rows.items() if r.chance]
    checked.append("models above chance: " + ("no, " + ", ".join(chance) + " at chance level" if chance else "yes"))
    metric = table.columns[0].metric
    checked.append(saturation(rows, metric))
    cells = {name: _cell(table, r, statistic)[0] for name, r in rows.items()}
    absent = {name: c for name, c in cells.items() if not isinstance(c, Stat)}
    if absent:
        reasons = "; ".join(f"{n}: {c.reason if isinstance(c, Missing) else 'no value'}" for n, c in absent.items())
        if statistic == "p_com":
            checked.append("update decidable: no (" + reasons + ")")
        return Finding(UNDECIDABLE, "; ".join(f"{n}: –" for n in absent), checked + ([] if statistic == "p_com" else [reasons]))
    if statistic == "p_com":
        checked.append("update decidable: yes (reference self − old self significantly positive, above the minimum)")
    sa, sb = cells[a.name], cells[b.name]
    ours = f"{a.name} {_text(sa, digits)} vs {b.name} {_text(sb, digits)} ({statistic} of {metric})"
    if chance:
        return Finding(UNDECIDABLE, ours, checked)
    if sa.replicates is None or sb.replicates is None:
        return Finding(UNDECIDABLE, ours, checked + ["intervals: no per-query outcomes stored"])
    low, high = bootstrap.interval(sa.replicates - sb.replicates)
    ours += f"; difference {sa.mean - sb.mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"
    verdict = REPRODUCED if low > 0 else NOT_REPRODUCED if high <= 0 else UNDECIDABLE
    if statistic == "AC":
        checked.append("how far from compatible (mean over pairs t > k of C[t][k] − C[k][k], points): " +
                       ", ".join(f"{name} {cross_margin(row, metric):+.1f}" for name, row in rows.items()))
    return Finding(verdict, ours, checked, (a.method, b.method))


def saturation(rows: dict[str, Row], metric: str) -> str:
    """The decidable-scale check "no self-test above 95%" on the compared rows' records: each model's self-test (the matrix
    diagonal) and the reference's. Near 100% a later model can hardly beat its gallery's self-test (AC counts
    strict wins), so a saturated scale biases compatibility statistics down."""
    above = {}
    for name, row in rows.items():
        tests = []
        for record in row.finished:
            matrix = record.matrices[metric]
            tests += [matrix[t][t] for t in range(len(matrix)) if matrix[t][t] is not None]
            if (reference := getattr(record.metrics[metric], "reference_self", None)) is not None:
                tests.append(reference)
        high = [v for v in tests if v > SATURATED]
        if high:
            above[name] = f"{name} {len(high)} of {len(tests)} (up to {max(high):.1f})"
    return f"self-tests at most {SATURATED:g}%: " + ("no, " + ", ".join(above.values()) if above else "yes")


def cross_margin(row: Row, metric: str) -> float:
    """Mean over seeds and pairs t > k of C[t][k] − C[k][k]: AC counts only the pairs where this is positive,
    so two rows at AC 0 can still be far apart (cross-tests a point below their gallery's self-test, or 60)."""
    margins = [matrix[t][k] - matrix[k][k] for record in row.finished for matrix in [record.matrices[metric]]
               for t in range(len(matrix)) for k in range(t) if matrix[t][k] is not None]
    return float(np.mean(margins)) if margins else float("nan")


def beyond(table: Table, a: Pick, statistic: str, bound: float, *, above: bool) -> Finding:
    """Whether ``a``'s ``statistic`` is significantly above (``above``) or below ``bound``: e.g. AC < 1 (not
    compatible throughout), or P_com > 0 (cross-test above the old self-test: BCT's empirical criterion)."""
    row = a.find(table)
    if row is None:
        return Finding(UNDECIDABLE, NOT_RUN, [a.not_found(table)])
    cell, metric = _cell(table, row, statistic)
    checked = [f"records: {len(row.finished)} seed(s) of {a.name}",
               "models above chance: " + ("no" if row.chance else "yes"),
               saturation({a.name: row}, table.columns[0].metric)]
    if not isinstance(cell, Stat) or cell.replicates is None:
        reason = cell.reason if isinstance(cell, Missing) else "no interval"
        return Finding(UNDECIDABLE, f"{a.name}: –", checked + [reason])
    low, high = cell.interval
    ours = f"{a.name} {_text(cell, 3)} ({statistic} of {metric})"
    if row.chance:
        return Finding(UNDECIDABLE, ours, checked)
    holds, fails = (low > bound, high <= bound) if above else (high < bound, low >= bound)
    return Finding(REPRODUCED if holds else NOT_REPRODUCED if fails else UNDECIDABLE, ours, checked, (a.method,))


def both(first: Finding, second: Finding) -> Finding:
    """A claim of two parts: reproduced when both are, not reproduced when either is not."""
    verdicts = {first.verdict, second.verdict}
    verdict = NOT_REPRODUCED if NOT_REPRODUCED in verdicts else REPRODUCED if verdicts == {REPRODUCED} else UNDECIDABLE
    return Finding(verdict, f"{first.ours}; {second.ours}", first.checked + second.checked,
                   tuple(dict.fromkeys(first.methods + second.methods)))


def best_euclidean(table: Table) -> Pick | None:
    """The Euclidean compatibility method with the highest displayed P_com in ``table`` (by cross when no
    Euclidean row has a decidable P_com, so that the comparison can say why)."""
    metric = table.columns[0].metric
    rows = [r for r in table.rows if r.method not in HYPERBOLIC + NOT_COMPATIBILITY_METHODS and not r.chance]
    for statistic in ("p_com", "cross"):
        scored = [(c.mean, r.method) for r in rows for c in [r.cells.get(f"{metric}:{statistic}")] if isinstance(c, Stat)]
        if scored:
            return Pick(max(scored)[1])
    return None


HOC, ER, FD = Pick("hoc", (("lam", 0.1),)), Pick("er"), Pick("dsimplex-fd")  # HOC as published: lambda = 0.1
CLAIMS = [
    Claim("IAM-CL2R (Stationary HOC)", "HOC's AC far above ER's", "AC 0.95 vs × (0) on CIFAR100R/10, 7 tasks",
          ("iam-cl2r",), lambda t: compare(t, HOC, ER, "AC"),
          HOC_TESTS + (BASELINES + "test_er_is_cross_entropy_over_new_and_replayed_samples_half_each",) + AC_TESTS),
    Claim("IAM-CL2R (Stationary HOC)", "AA order HOC > d-Simplex-FD > ER", "AA_7 68.13 > 56.58 > 36.22",
          ("iam-cl2r",), lambda t: both(compare(t, HOC, FD, "AA"), compare(t, FD, ER, "AA")),
          HOC_TESTS + (STATIONARY + "test_fd_distils_only_replayed_samples_with_the_cl2r_weight",
                       BASELINES + "test_er_is_cross_entropy_over_new_and_replayed_samples_half_each",
                       COMPATIBILITY + "test_hoc_notebook_matrix_t7")),
    Claim("IAM-CL2R (Stationary HOC)", "λ = 1 (stationarity without HOC) is not compatible while HOC is",
          "ablation: λ = 1 gives AC 0; HOC (λ = 0.1) 0.95",
          ("iam-cl2r", "cl2r"), lambda t: compare(t, HOC, Pick("hoc", (("lam", 1.0),)), "AC"), HOC_TESTS + AC_TESTS),
    *(Claim("CoReS", f"CoReS more compatible than {other} over many upgrades",
            "AC 0.51 vs BCT 0.11 (CIFAR-100, 9 upgrades); independent models are never compatible",
            ("multi-step",), lambda t, o=other: compare(t, Pick("cores"), Pick(o), "AC"),
            (BASELINES + "test_cores_distance_is_the_mean_euclidean_distance_over_old_class_samples",
             STATIONARY + "test_cores_initialisation_options", BASELINES + "test_l2_objectives_by_hand",
             COMPAT + "test_fine_tuning_starts_from_the_old_model") + AC_TESTS)
      for other in ("independent", "ift", "l2")),
    Claim("CoReS / BCT", "BCT compatible after one update but not after many",
          "one upgrade: cross 0.59 ≥ old self 0.59 (ECC ✓); 9 upgrades AC 0.11",
          ("ext-class", "multi-step"), lambda t: (beyond(t, Pick("bct"), "p_com", 0.0, above=True)  # cross > old self
                                                  if t.single_update else beyond(t, Pick("bct"), "AC", 1.0, above=False)),
          (COMPAT + "test_influence_loss_is_cross_entropy_of_the_old_head_on_new_features",
           COMPAT + "test_old_classifier_synthesises_new_class_rows_from_old_class_means") + P_COM_TESTS + AC_TESTS),
    *(Claim("PSP/LSP", f"{m.upper()} compatible on multi-step where independent encoders are not" + (
                "" if temperature == 1.0 else f" (trained at the paper's temperature {temperature:g})"),
            "AC (TinyImageNet, 5 steps) PSP 0.90, LSP 1 vs baseline 0", ("multi-step",),
            lambda t, m=m, temperature=temperature: compare(t, Pick(m, (("temperature", temperature),)),
                                                            Pick("independent"), "AC"),
            (OUTPUTS + "test_projection_equals_eq_2_4_for_softmax_and_logits", OUTPUTS + "test_projection_by_hand",
             OUTPUTS + "test_projected_prototypes_equal_old_prototypes", OUTPUTS + "test_top_k_keeps_the_k_largest_entries",
             "tests/test_seen_classes.py::test_entries_are_scored_on_the_gallery_models_classes")
            + AC_TESTS) for m in ("psp", "lsp") for temperature in (1.0, 12.0)),  # the cpu preset's 1, the paper's 12
    Claim("HBCT", "HBCT's P_com above the best Euclidean method's",
          "CMC@1 P_com on CIFAR100: ext-data 0.956 vs 0.900 (BCT); ext-class 0.495 vs 0.336 (HOC)",
          ("ext-data", "ext-class", "both"), lambda t: compare(t, Pick("hbct"), best_euclidean, "p_com"),
          HBCT_TESTS + P_COM_TESTS),
    Claim("HBCT", "HBCT's P_com above HBCT without the entailment loss",
          "CMC@1 P_com on CIFAR100 ext-data 0.956 vs 0.847", ("ext-data", "ext-class", "both"),
          lambda t: compare(t, Pick("hbct"), Pick("hbct-no-entail"), "p_com"), HBCT_TESTS + P_COM_TESTS),
]


def _training_length(table: Table) -> tuple[int, int] | None:
    """The table's (train.epochs, train.min_steps), which its calibration must have started from."""
    train = table.config.get("train")
    return (train["epochs"], train.get("min_steps", 0)) if isinstance(train, dict) and "epochs" in train else None


@dataclass(frozen=True)
class PlannedScenario:
    """A scenario a preset defines: ``claims.md`` names those of the records' presets that hold no records."""

    preset: str
    scenario: str
    kind: str
    dataset: str


def claims_markdown(tables: list[Table], header: str, calibrations: Sequence[Calibration] = (),
                    planned: Sequence[PlannedScenario] = ()) -> str:
    """``claims.md``: one line per claim and table that can test it (a table per dataset and preset); each
    line's checks end with whether that scenario's training converged (``calibrations``). ``planned``: the
    scenarios of the records' presets; those without a table and with claims to test are listed as untested."""
    lines = ["# Claims of the papers, tested", header,
             "Each claim is tested on every stored table of a scenario that can test it. Ours: mean over seeds with "
             "its 95% bootstrap interval (queries and seeds); the verdict follows the interval of the paired "
             "difference: *reproduced* above zero, *not reproduced* at or below zero, *undecidable at this scale* "
             "when it contains zero or a precondition fails (rows missing or at chance level, no per-query "
             "outcomes, P_com not decidable). Paper numbers are the papers' own, at their scale (ResNet-18/ViT on "
             "CIFAR-100/TinyImageNet); ours come from the scale in the second column. Whether that scale's training "
             "converged (50% more epochs moving no self-test by more than 2 points) is measured by "
             "`benchbackcompat calibrate --summary`, stored beside the records (`calibration/*.json`) and named in "
             "each claim's checks.",
             "| paper | claim | paper's numbers | dataset · preset · scenario | ours | verdict | what was checked |",
             "|---|---|---|---|---|---|---|"]
    for claim in CLAIMS:
        findings = [(table, claim.test(table)) for table in tables if table.kind in claim.kinds]
        if any(f.ours != NOT_RUN for _, f in findings):  # a table of that kind without the claim's methods adds nothing
            findings = [(t, f) for t, f in findings if f.ours != NOT_RUN]
        for table, finding in findings:
            finding.checked.insert(0, f"bugs excluded: {len(claim.implementation)} tests of the objectives and metric "
                                      "against the papers (listed below)")
            finding.checked.append(convergence(calibrations, table.dataset, table.preset, table.scenario,
                                               finding.methods, _training_length(table)))
            where = f"{table.dataset} · {table.preset} · {table.title}"
            lines.append("| " + " | ".join(escape(x) for x in (
                claim.paper, claim.statement, claim.paper_numbers, where, finding.ours)) +
                f" | **{finding.verdict}** | " + escape("; ".join(finding.checked)) + " |")
        if not any(t.kind in claim.kinds for t in tables):
            lines.append("| " + " | ".join(escape(x) for x in (claim.paper, claim.statement, claim.paper_numbers)) +
                         f" | – | not run | **{UNDECIDABLE}** | no stored table of {escape(', '.join(claim.kinds))} |")
    return ("\n\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n\n" + untested_scales(tables, planned) +
            implementation_checks() + "\n")


def untested_scales(tables: list[Table], planned: Sequence[PlannedScenario]) -> str:
    """The section naming each planned scenario that could test a claim but holds no stored records ("" if none)."""
    stored = {(t.preset, t.scenario) for t in tables}
    rows = []
    for scenario in planned:
        papers = [c.paper for c in CLAIMS if scenario.kind in c.kinds]
        if papers and (scenario.preset, scenario.scenario) not in stored:
            counts = ", ".join(f"{paper} ({papers.count(paper)})" for paper in dict.fromkeys(papers))
            rows.append(f"| {escape(scenario.preset)} · {escape(scenario.scenario)} | {escape(scenario.dataset)} | "
                        f"{escape(counts)} | `benchbackcompat run --preset {scenario.preset} --scenario "
                        f"{scenario.scenario}` |")
    if not rows:
        return ""
    return ("## Not tested: scenarios of these presets without stored records\n\n"
            "Their claims have no verdict above; the records' presets define them, and nothing was stored for them.\n\n"
            "| preset · scenario | dataset | claims it would test (count) | command that stores them |\n|---|---|---|---|\n" +
            "\n".join(rows) + "\n\n")


def implementation_checks() -> str:
    """The section naming, per claim, the tests that exclude a bug behind its verdict."""
    lines = ["## Bugs excluded: what each claim's implementation is tested against",
             "Run one with `pytest PATH::TEST`; each compares an objective or a metric with something independent "
             "of the code (the paper's equation written out, a published number, a hand computation)."]
    for claim in CLAIMS:
        by_file: dict[str, list[str]] = {}
        for node in claim.implementation:
            path, test = node.split("::")
            by_file.setdefault(path, []).append(test)
        lines.append(f"- **{escape(claim.paper)}: {escape(claim.statement)}**: " + "; ".join(
            f"`{path}`: " + ", ".join(f"`{test}`" for test in tests) for path, tests in by_file.items()))
    return "\n\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:])
