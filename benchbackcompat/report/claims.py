"""The claims report: each paper's claim as data, tested on the stored tables that have the protocol it needs.

A claim declares its source (paper, venue, table or section, the exact numbers quoted), the protocol it
needs (scenario kind, retrieval protocol and metric, evaluation split, classes scored), the rows it
compares (the paper's own baselines), the effect it asserts (a declared minimum difference) and the seeds
it needs. It is judged only on tables whose records' resolved configuration has that protocol.

Verdict, from the interval of the paired difference (``metrics.bootstrap``: a t-interval over seeds, never
narrower than the query bootstrap's within-seed variance): *reproduced* when it lies above zero and reaches
the declared effect; *not reproduced* when it lies entirely below the declared effect; *undecidable* when it
spans both zero and the effect, or when a precondition fails (a row missing or at chance level, no per-query
outcomes, fewer than two seeds, P_com not decidable). A claim of several comparisons (every one must hold)
takes Bonferroni intervals and is reproduced when all are, not reproduced when any is not.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from benchbackcompat.scenarios.kinds import kind_class
from benchbackcompat.metrics import bootstrap
from benchbackcompat.report.aggregate import Missing, Row, Stat, Table
from benchbackcompat.report.calibration import Calibration, convergence
from benchbackcompat.report.markdown import escape

REPRODUCED, NOT_REPRODUCED, UNDECIDABLE = "reproduced", "not reproduced", "undecidable"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, UNDECIDABLE)
NOT_RUN = "not run"  # the finding of a table that lacks a compared method
SATURATED = 95.0  # a self-test above this (%) leaves a later model little room to beat it
UNCHECKED = ("the protocol, the classes scored, temperature semantics, the data behind pretrained models and the "
             "CoReS objective as a whole")


def verdict(low: float, high: float, effect: float) -> str:
    """The equivalence-margin rule on the interval [low, high] of a difference a − b whose claim asserts at least
    ``effect`` (> 0 for "a above b"; 0 for a bare "a above b"): *not reproduced* when the interval lies entirely
    below the effect, *reproduced* when it lies above zero (and reaches the effect), else *undecidable*."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return UNDECIDABLE
    if high < effect:
        return NOT_REPRODUCED
    return REPRODUCED if low > 0 else UNDECIDABLE


@dataclass(frozen=True)
class Source:
    """Where a claim comes from: ``numbers`` are quoted exactly as printed (tests check them against the text)."""

    paper: str
    venue: str
    where: str  # table or section, dataset and scale
    numbers: tuple[tuple[str, float], ...]

    @property
    def quote(self) -> str:
        return f"{self.where}: " + ", ".join(f"{name} {value:g}" for name, value in self.numbers)

    def number(self, name: str) -> float:
        return dict(self.numbers)[name]


@dataclass(frozen=True)
class Protocol:
    """The evaluation a claim needs: ``retrieval`` lists the accepted (protocol, metric) pairs."""

    kind: str
    retrieval: tuple[tuple[str, str], ...]
    eval_split: str
    classes: str = "all"  # every class, or "seen": entry C[t][k] scored on gallery model k's classes only

    def describe(self) -> str:
        pairs = " or ".join(f"{protocol} {metric}" for protocol, metric in self.retrieval)
        return f"{self.kind} · {pairs} · {self.eval_split} split · {self.classes} classes scored"

    def metric(self, table: Table) -> str | None:
        """The claim's metric in ``table``; ``None`` when the table does not have this protocol."""
        return self.match(resolved_protocol(table.kind, table.config, table.metrics))

    def match(self, found: dict[str, object]) -> str | None:
        """The claim's metric under the resolved protocol ``found``; ``None`` when it is not this protocol."""
        if (found["kind"], found["eval_split"], found["classes"]) != (self.kind, self.eval_split, self.classes):
            return None
        return next((m for p, m in self.retrieval if p == found["protocol"] and m in found["metrics"]), None)


def resolved_protocol(kind: str, config: dict[str, object], metrics: Sequence[str]) -> dict[str, object]:
    """The protocol of a scenario's resolved configuration (the kind's defaults where a field is not stored)."""
    fields = kind_class(kind).model_fields
    default = lambda name: fields[name].default if name in fields else None  # noqa: E731
    return {"kind": kind, "protocol": config.get("protocol", default("protocol")),
            "eval_split": config.get("eval_split", default("eval_split")),
            "classes": config.get("eval_classes", default("eval_classes") or "all"), "metrics": list(metrics)}


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
        """Why :meth:`find` found no row, for the report's checks."""
        settings = [r.label for r in table.rows if r.method == self.method]
        if len(settings) > 1:
            return f"records: {len(settings)} settings of {self.method} here ({', '.join(settings)}); the claim names none"
        return f"records: no {self.name} in this table"


@dataclass(frozen=True)
class Comparison:
    """``a``'s ``statistic`` above ``b``'s (``b_statistic`` when another statistic of the same row, e.g. a
    cross-test against its old self-test) by at least ``effect``."""

    a: Pick
    b: Pick
    statistic: str
    effect: float
    b_statistic: str = ""

    def label(self) -> str:
        if self.b_statistic:
            return f"{self.a.name} {self.statistic} − {self.b_statistic}"
        return f"{self.a.name} − {self.b.name} ({self.statistic})"


@dataclass
class Finding:
    verdict: str
    ours: str
    checked: list[str] = field(default_factory=list)
    methods: tuple[str, ...] = ()  # the methods the verdict rests on: whose training convergence matters
    seeds: int = 0  # the fewest seeds any comparison rests on


@dataclass(frozen=True)
class Premise:
    """A condition of the paper's setting that a table must show before its claim can be judged there, measured
    on the table's own records: ``check(table, metric)`` gives (holds, what was measured)."""

    statement: str
    check: Callable[[Table, str], tuple[bool, str]]


PREMISE_TOLERANCE = 2.0  # points: the convergence calibration's tolerance; a smaller move is within noise


def fine_tuning_moves(table: Table, metric: str) -> tuple[bool, str]:
    """IAM-CL2R's premise: models pretrained elsewhere are improved by fine-tuning on the task data, so later models
    can beat earlier galleries. Measured as each run of fine-tuning's self-test change (from the model that starts
    from a pretrained one to the last before the next replacement), averaged over runs and records."""
    changes = []
    for row in table.rows:
        for record in row.finished:
            diagonal = [row_[i] for i, row_ in enumerate(record.matrices.get(metric) or [])]
            starts = [i for i, step in enumerate(record.steps) if step.get("init") == "pretrained"] + [len(diagonal)]
            changes += [diagonal[end - 1] - diagonal[start] for start, end in zip(starts, starts[1:])
                        if end - start > 1 and None not in (diagonal[start], diagonal[end - 1])]
    if not changes:
        return False, "no run of fine-tuning between replacements to measure"
    mean = float(np.mean(changes))
    return mean >= PREMISE_TOLERANCE, (f"mean self-test change over a run of fine-tuning {mean:+.1f} points "
                                       f"({len(changes)} runs; at least +{PREMISE_TOLERANCE:g} needed)")


FINE_TUNING_IMPROVES = Premise("fine-tuning on the task data improves the models pretrained elsewhere",
                               fine_tuning_moves)


@dataclass(frozen=True)
class Claim:
    """A paper's claim as data. ``effect_basis`` says how each comparison's minimum effect was declared;
    ``implementation``: the tests (``path::function``) of the loss formulas and metrics the verdict uses;
    ``variant``: non-empty for a variant the paper did not tabulate (why it is shown); ``premise``: a condition of
    the paper's setting the table must show, else the verdict is undecidable."""

    source: Source
    statement: str
    protocol: Protocol
    comparisons: tuple[Comparison, ...]
    effect_basis: str
    seeds: int = 3
    implementation: tuple[str, ...] = ()
    variant: str = ""
    premise: Premise | None = None

    @property
    def paper(self) -> str:
        return self.source.paper

    @property
    def confidence(self) -> float:
        """Bonferroni over the comparisons that must all hold."""
        return 1.0 - (1.0 - bootstrap.CONFIDENCE) / len(self.comparisons)

    def judge(self, table: Table) -> Finding:
        """The claim on ``table`` (which must have its protocol); undecidable where the table does not show the
        paper's premise."""
        metric = self.protocol.metric(table)
        if metric is None:
            raise ValueError(f"{table.title} does not have the protocol of {self.statement!r}")
        finding = self._compare(table, metric)
        if self.premise is not None and finding.ours != NOT_RUN:
            holds, measured = self.premise.check(table, metric)
            finding.checked.insert(0, f"premise, {self.premise.statement}: {'yes' if holds else 'no'} ({measured})")
            if not holds:
                finding.verdict = UNDECIDABLE
        return finding

    def _compare(self, table: Table, metric: str) -> Finding:
        findings = [compare(table, metric, c, self.confidence) for c in self.comparisons]
        if len(findings) == 1:
            return findings[0]
        verdicts = {f.verdict for f in findings}
        combined = NOT_REPRODUCED if NOT_REPRODUCED in verdicts else REPRODUCED if verdicts == {REPRODUCED} else UNDECIDABLE
        not_run = [c.b.name for c, f in zip(self.comparisons, findings) if f.ours == NOT_RUN]
        ours = "; ".join(dict.fromkeys(part for f in findings if f.ours != NOT_RUN for part in f.ours.split("; ")))
        if len(not_run) == len(findings):
            ours = NOT_RUN
        elif not_run:
            ours += f"; not run here: {', '.join(not_run)}"
        checked = [f"multiplicity: {len(findings)} comparisons, each must hold: {100 * self.confidence:g}% "
                   "intervals (Bonferroni)"] + [c for f in findings for c in f.checked]
        return Finding(combined, ours, list(dict.fromkeys(checked)),
                       tuple(dict.fromkeys(m for f in findings for m in f.methods)),
                       min(f.seeds for f in findings))


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
CORES_TESTS = (BASELINES + "test_cores_distance_is_the_mean_euclidean_distance_over_old_class_samples",
               STATIONARY + "test_cores_initialisation_options")
BCT_TESTS = (COMPAT + "test_influence_loss_is_cross_entropy_of_the_old_head_on_new_features",
             COMPAT + "test_old_classifier_synthesises_new_class_rows_from_old_class_means")
PSP_TESTS = (OUTPUTS + "test_projection_equals_eq_2_4_for_softmax_and_logits", OUTPUTS + "test_projection_by_hand",
             OUTPUTS + "test_projected_prototypes_equal_old_prototypes", OUTPUTS + "test_top_k_keeps_the_k_largest_entries",
             "tests/test_seen_classes.py::test_entries_are_scored_on_the_gallery_models_classes")

HALF = "half the paper's difference"
STATIONARY_HOC = ("Stationary Representations: Optimally Approximating Compatibility and Implications for Improved "
                  "Model Replacements", "CVPR 2024")
STATIONARY_JOURNAL = ("A Stationary (and Therefore Compatible) Representation is All You Need",
                      "arXiv 2606.12488, 2026 (journal version of Stationary Representations)")
CORES = ("CoReS: Compatible Representations via Stationarity", "IEEE TPAMI 2023")
HBCT = ("Learning Along the Arrow of Time: Hyperbolic Geometry for Backward-Compatible Representation Learning",
        "ICML 2025")
PSP_LSP = ("The Probability Simplex is Compatible", "ICLR 2025 submission")

IAM = Protocol("iam-cl2r", (("template", "top1"),), "open")
CL2R = Protocol("cl2r", (("template", "top1"),), "open")
# CoReS scores open-set verification on classes no model trained on (CIFAR-10 pairs, 10-fold threshold);
# leave-one-out retrieval on such open classes is accepted as the same question asked by ranking
CORES_OPEN = (("verification", "verification"), ("loo", "cmc@1"))
HOC, ER, FD = Pick("hoc", (("lam", 0.1),)), Pick("er"), Pick("dsimplex-fd")  # HOC as published: lambda = 0.1
HBCT_BASELINES = ("l2", "bct", "hot-refresh", "advbct", "hoc-euclidean")  # HBCT Sec. 5.1 "Baselines"


def _half(source: Source, a: str, b: str) -> float:
    return round((source.number(a) - source.number(b)) / 2, 6)


def _iam_claims() -> list[Claim]:
    where = "Table 1, CIFAR100R/10, 7 tasks"
    ac = Source(*STATIONARY_HOC, where, (("d-Simplex-HOC AC", 0.95), ("ER baseline AC (×)", 0.0)))
    aa = Source(*STATIONARY_HOC, where, (("d-Simplex-HOC AA_7", 68.13), ("d-Simplex-FD AA_7", 56.58),
                                         ("ER baseline AA_7", 36.22)))
    ablation = Source(*STATIONARY_JOURNAL, "Table VIII(b), CL2R, CIFAR100/10, 16 tasks",
                      (("λ = 0.10 AC", 0.90), ("λ = 1 AC", 0.0)))
    return [
        Claim(ac, "HOC's AC far above ER's", IAM,
              (Comparison(HOC, ER, "AC", _half(ac, "d-Simplex-HOC AC", "ER baseline AC (×)")),), HALF,
              implementation=HOC_TESTS + (BASELINES + "test_er_is_cross_entropy_over_new_and_replayed_samples_half_each",)
              + AC_TESTS, premise=FINE_TUNING_IMPROVES),
        Claim(aa, "AA order HOC > d-Simplex-FD > ER", IAM,
              (Comparison(HOC, FD, "AA", _half(aa, "d-Simplex-HOC AA_7", "d-Simplex-FD AA_7")),
               Comparison(FD, ER, "AA", _half(aa, "d-Simplex-FD AA_7", "ER baseline AA_7"))), HALF + " (each)",
              implementation=HOC_TESTS + (STATIONARY + "test_fd_distils_only_replayed_samples_with_the_cl2r_weight",
                                          BASELINES + "test_er_is_cross_entropy_over_new_and_replayed_samples_half_each",
                                          COMPATIBILITY + "test_hoc_notebook_matrix_t7"),
              premise=FINE_TUNING_IMPROVES),
        Claim(ablation, "λ = 1 (stationarity without HOC) is not compatible while HOC (λ = 0.1) is", CL2R,
              (Comparison(HOC, Pick("hoc", (("lam", 1.0),)), "AC", _half(ablation, "λ = 0.10 AC", "λ = 1 AC")),), HALF,
              implementation=HOC_TESTS + AC_TESTS),
    ]


def _cores_claims() -> list[Claim]:
    four = Source(*CORES, "Sec. 5.1 (Fig. 6), CIFAR-100/10 open-set verification, 4 upgrades",
                  (("CoReS AC", 0.9), ("BCT AC", 0.5)))
    one = Source(*CORES, "Table 1, CIFAR-100/10 open-set verification, one upgrade (50% -> 100%)",
                 (("old self-test", 0.60), ("BCT cross-test", 0.60), ("CoReS cross-test", 0.61)))
    single = Protocol("ext-class", CORES_OPEN, "open")
    ecc = "the Empirical Compatibility Criterion: cross-test above the old self-test (any positive difference)"
    return [
        Claim(four, "CoReS more compatible than BCT over many upgrades", Protocol("multi-step", CORES_OPEN, "open"),
              (Comparison(Pick("cores"), Pick("bct"), "AC", _half(four, "CoReS AC", "BCT AC")),), HALF,
              implementation=CORES_TESTS + BCT_TESTS + AC_TESTS),
        Claim(one, "BCT compatible after one upgrade (cross-test above the old self-test)", single,
              (Comparison(Pick("bct"), Pick("bct"), "cross", 0.0, b_statistic="old_self"),), ecc,
              implementation=BCT_TESTS + P_COM_TESTS),
        Claim(one, "CoReS compatible after one upgrade (cross-test above the old self-test)", single,
              (Comparison(Pick("cores"), Pick("cores"), "cross", 0.0, b_statistic="old_self"),), ecc,
              implementation=CORES_TESTS + P_COM_TESTS),
    ]


def _hbct_claims() -> list[Claim]:
    claims = []
    kinds = {"ext-data": "Ext-data", "ext-class": "Ext-class", "new-arch": "New-Arch", "both": "Both"}
    table1 = {  # HBCT Table 1, CIFAR100, CMC@1 P_com
        "ext-data": (0.510, 0.900, 0.693, 0.760, 0.685, 0.847, 0.956),
        "ext-class": (0.302, 0.210, 0.360, 0.244, 0.336, 0.435, 0.495),
        "new-arch": (0.343, 0.623, 0.517, 0.449, 0.534, -0.178, 0.937),
        "both": (0.185, -0.054, 0.202, 0.245, 0.116, -0.487, 0.324),
    }
    names = ("ℓ2", "BCT", "Hot-Refresh", "AdvBCT", "HOC", "HBCT w/o entail", "HBCT")
    for kind, row in table1.items():
        source = Source(*HBCT, f"Table 1, CIFAR100, {kinds[kind]}, CMC@1 P_com", tuple(zip(names, row)))
        best = max(names[:5], key=source.number)
        protocol = Protocol(kind, (("loo", "cmc@1"),), "test")
        effect = _half(source, "HBCT", best)
        claims.append(Claim(
            source, f"HBCT's P_com above each of the paper's Euclidean baselines ({kind})", protocol,
            tuple(Comparison(Pick("hbct"), Pick(m), "p_com", effect) for m in HBCT_BASELINES),
            f"half the paper's difference to its best Euclidean baseline ({best} {source.number(best):g}), "
            "against each", implementation=HBCT_TESTS + P_COM_TESTS))
        claims.append(Claim(
            source, f"HBCT's P_com above HBCT without the entailment loss ({kind})", protocol,
            (Comparison(Pick("hbct"), Pick("hbct-no-entail"), "p_com", _half(source, "HBCT", "HBCT w/o entail")),),
            HALF, implementation=HBCT_TESTS + P_COM_TESTS))
    return claims


def _psp_claims() -> list[Claim]:
    source = Source(*PSP_LSP, "Table 1(b), TinyImageNet200, 5 steps, Recall@1",
                    (("PSP AC", 0.90), ("LSP AC", 1.0), ("Baseline AC", 0.0)))
    claims = []
    for classes, variant in (("all", ""), ("seen", "Theorem 1's premise: each entry C[t][k] scored on the classes gallery "
                                                     "model k was trained on; the paper's tables score every class and "
                                                     "do not tabulate this variant")):
        for method in ("psp", "lsp"):
            for temperature in (1.0, 12.0):  # the cpu preset's 1, the paper's 12
                claims.append(Claim(
                    source, f"{method.upper()} compatible on multi-step where independent encoders are not" + (
                        "" if temperature == 1.0 else f" (trained at the paper's temperature {temperature:g})"),
                    Protocol("multi-step", (("loo", "cmc@1"),), "test", classes),
                    (Comparison(Pick(method, (("temperature", temperature),)), Pick("independent"), "AC",
                                _half(source, f"{method.upper()} AC", "Baseline AC")),), HALF,
                    implementation=PSP_TESTS + AC_TESTS, variant=variant))
    return claims


CLAIMS = _iam_claims() + _cores_claims() + _hbct_claims() + _psp_claims()


def _text(stat: Stat, digits: int) -> str:
    text = f"{stat.mean:.{digits}f}"
    if stat.interval is not None:
        text += f" [{stat.interval[0]:.{digits}f}, {stat.interval[1]:.{digits}f}]"
    return text


def compare(table: Table, metric: str, comparison: Comparison, confidence: float = bootstrap.CONFIDENCE) -> Finding:
    """Whether ``comparison`` holds on ``table``'s ``metric``: the interval of the paired difference (seed by
    seed) against zero and the declared effect (:func:`verdict`)."""
    a, b = comparison.a, comparison.b
    statistic, b_statistic = comparison.statistic, comparison.b_statistic or comparison.statistic
    digits = 3 if statistic in ("AC", "p_com", "p_up") else 2
    rows = {p.name: p.find(table) for p in (a, b)}
    missing = [p for p in dict.fromkeys((a, b)) if rows[p.name] is None]
    if missing:
        return Finding(UNDECIDABLE, NOT_RUN, [p.not_found(table) for p in missing])
    checked = [f"records: {len(r.finished)} seed(s) of {name}" for name, r in rows.items()]
    chance = [name for name, r in rows.items() if r.chance]
    checked.append("models above chance: " + ("no, " + ", ".join(chance) + " at chance level" if chance else "yes"))
    checked.append(saturation(rows, metric))
    cells = {side: rows[p.name].cells.get(f"{metric}:{s}") for side, p, s in (("a", a, statistic), ("b", b, b_statistic))}
    absent = {side: c for side, c in cells.items() if not isinstance(c, Stat)}
    if absent:
        reasons = "; ".join(f"{(a if side == 'a' else b).name}: {c.reason if isinstance(c, Missing) else 'no value'}"
                            for side, c in absent.items())
        prefix = "update decidable: no (" if statistic == "p_com" else "missing: ("
        return Finding(UNDECIDABLE, "; ".join(f"{(a if s == 'a' else b).name}: –" for s in absent),
                       checked + [prefix + reasons + ")"])
    if statistic == "p_com":
        checked.append("update decidable: yes (reference self − old self significantly positive, above the minimum)")
    sa, sb = cells["a"], cells["b"]
    left = a.name if not comparison.b_statistic else f"{a.name} {statistic}"
    right = b.name if not comparison.b_statistic else f"{b.name} {b_statistic}"
    ours = f"{left} {_text(sa, digits)} vs {right} {_text(sb, digits)} ({statistic} of {metric})"
    if chance:
        return Finding(UNDECIDABLE, ours, checked)
    if sa.replicates is None or sb.replicates is None:
        return Finding(UNDECIDABLE, ours, checked + ["intervals: no per-query outcomes stored"])
    difference = sa.replicates - sb.replicates
    seeds = len(difference.seeds) if isinstance(difference, bootstrap.SeedSample) else 1
    if seeds < 2:
        return Finding(UNDECIDABLE, ours, checked + [f"seeds: {seeds} in common, too few for a seed-level interval"],
                       seeds=seeds)
    low, high = bootstrap.interval(difference, confidence)
    mean = float(np.mean(difference.values))
    ours += (f"; difference {mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}] "
             f"against a declared effect of {comparison.effect:.{digits}f}")
    checked.append(f"interval: {100 * confidence:g}% t-interval over {seeds} paired seeds (never narrower than the "
                   "query bootstrap within each seed)")
    if statistic == "AC":
        checked.append("how far from compatible (mean over pairs t > k of C[t][k] − C[k][k], points): " +
                       ", ".join(f"{name} {cross_margin(row, metric):+.1f}" for name, row in rows.items()))
    return Finding(verdict(low, high, comparison.effect), ours, checked, tuple(dict.fromkeys((a.method, b.method))),
                   seeds)


def saturation(rows: dict[str, Row], metric: str) -> str:
    """Each compared row's self-tests (the matrix diagonal and the reference) above 95%: near 100% a later model
    can hardly beat its gallery's self-test (AC counts strict wins), so a saturated scale biases compatibility
    statistics down."""
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


def _training_length(table: Table) -> tuple[int, int] | None:
    """The table's (train.epochs, train.min_steps), which its calibration must have started from."""
    train = table.config.get("train")
    return (train["epochs"], train.get("min_steps", 0)) if isinstance(train, dict) and "epochs" in train else None


@dataclass(frozen=True)
class PlannedScenario:
    """A scenario a preset defines: ``claims.md`` names those of the records' presets that hold no records.
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
        return claim.protocol.match(resolved_protocol(self.kind, config, list(config.get("metrics", ())))) is not None


def judgements(tables: list[Table]) -> list[tuple[Claim, list[tuple[Table, Finding]]]]:
    """Each claim with its finding on every table that has its protocol (tables without the claim's methods are
    left out when another table has them)."""
    judged = []
    for claim in CLAIMS:
        findings = [(table, claim.judge(table)) for table in tables if claim.protocol.metric(table) is not None]
        if any(f.ours != NOT_RUN for _, f in findings):
            findings = [(t, f) for t, f in findings if f.ours != NOT_RUN]
        judged.append((claim, findings))
    return judged


def tally(judged: list[tuple[Claim, list[tuple[Table, Finding]]]], variants: bool) -> str:
    """The verdicts of the paper claims (or of the variants), one per claim and table that ran its rows."""
    counts = {v: 0 for v in VERDICTS}
    untested = 0
    for claim, findings in judged:
        if bool(claim.variant) != variants:
            continue
        ran = [f for _, f in findings if f.ours != NOT_RUN]
        untested += not ran
        for finding in ran:
            counts[finding.verdict] += 1
    return (" · ".join(f"**{n}** {v}" for v, n in counts.items()) +
            f" ({sum(counts.values())} verdicts, one per claim and table; {untested} claims untested: no stored table "
            "of their protocol, or their rows not run)")


def claims_markdown(tables: list[Table], header: str, calibrations: Sequence[Calibration] = (),
                    planned: Sequence[PlannedScenario] = ()) -> str:
    """``claims.md``: the tally, then per claim its source, protocol, effect and one verdict per table of its
    protocol, with the checks folded; each finding's checks end with whether that scenario's training converged
    (``calibrations``). ``planned``: the scenarios of the records' presets; those without a table and with claims
    to test are listed as untested."""
    judged = judgements(tables)
    parts = ["# Claims of the papers, tested", header,
             "Paper claims: " + tally(judged, variants=False) + ".  \nVariants the papers did not tabulate: " +
             tally(judged, variants=True) + ".", summary_markdown(judged),
             "Each claim declares its source, the protocol it needs, the rows it compares (the paper's baselines), the "
             "effect it asserts (a minimum difference) and the seeds it needs; it is judged only on stored tables with "
             "that protocol (from their records' configuration). The verdict follows the 95% interval of the paired "
             "difference over seeds (a t-interval honest for the number of seeds, never narrower than the query "
             "bootstrap within a seed; Bonferroni when a claim makes several comparisons): *reproduced* when it lies "
             "above zero and reaches the declared effect, *not reproduced* when it lies entirely below the declared "
             "effect, *undecidable* when it spans both, or when a precondition fails (rows missing or at chance level, "
             "no per-query outcomes, fewer than two seeds, P_com not decidable). Paper numbers are the papers' own, at "
             "their scale; ours come from the scale in each line. Whether that scale's training converged is measured "
             "by `benchbackcompat calibrate --summary` and named in each claim's checks."]
    for variants in (False, True):
        parts.append("## Variants the papers did not tabulate" if variants else "## The papers' claims")
        for claim, findings in judged:
            if bool(claim.variant) == variants:
                parts.append(_claim_section(claim, findings, calibrations))
    parts.append(untested_scales(tables, planned) + implementation_checks())
    return "\n\n".join(p for p in parts if p) + "\n"


def why_undecidable(claim: Claim, table: Table, finding: Finding) -> str:
    """An undecidable finding's reason in a few words, from the compared rows of ``table`` and the checks."""
    if finding.ours == NOT_RUN:
        return "its rows were not run here"
    metric = claim.protocol.metric(table)
    hidden: dict[str, list[str]] = {}
    for comparison in claim.comparisons:
        for pick, statistic in ((comparison.a, comparison.statistic),
                                (comparison.b, comparison.b_statistic or comparison.statistic)):
            row = pick.find(table)
            if row is None:
                return f"{pick.name} not run here"
            if row.chance:
                return f"{pick.name} at chance level"
            cell = row.cells.get(f"{metric}:{statistic}")
            if isinstance(cell, Missing):
                hidden.setdefault(cell.word, []).append(pick.name)
    if hidden:
        return "P_com not shown: " + "; ".join(f"{word} for {', '.join(dict.fromkeys(names))}"
                                               for word, names in hidden.items())
    if claim.premise is not None and any(c.startswith("premise,") and ": no (" in c for c in finding.checked):
        return f"premise not shown: {claim.premise.statement}"
    if any(c.startswith("intervals: no per-query outcomes") for c in finding.checked):
        return "no per-query outcomes stored"
    if any(c.startswith("seeds: ") for c in finding.checked):
        return "fewer than two seeds in common"
    return "the interval spans both 0 and the declared effect"


def summary_markdown(judged: list[tuple[Claim, list[tuple[Table, Finding]]]]) -> str:
    """One line per claim (paper claims, then variants): its verdict on each table of its protocol, and for an
    undecidable or untested one the reason in a few words."""
    parts = ["## Summary"]
    for variants in (False, True):
        lines = []
        for claim, findings in judged:
            if bool(claim.variant) != variants:
                continue
            verdicts = [f"**{finding.verdict}** on {escape(table.title)}" +
                        (f" ({escape(why_undecidable(claim, table, finding))})" if finding.verdict == UNDECIDABLE else "")
                        for table, finding in findings if finding.ours != NOT_RUN]
            if not verdicts:
                verdicts = ["**untested** (" + ("no stored table of its protocol" if not findings else
                                                "its rows were not run in the tables of its protocol") + ")"]
            lines.append(f"- {escape(claim.paper.split(':')[0])}: {escape(claim.statement)}: " + "; ".join(verdicts))
        if lines:
            parts.append(("Variants the papers did not tabulate:" if variants else "Paper claims:") + "\n\n"
                         + "\n".join(lines))
    return "\n\n".join(parts)


def _claim_section(claim: Claim, findings: list[tuple[Table, Finding]], calibrations: Sequence[Calibration]) -> str:
    effects = ", ".join(f"{c.label()} ≥ {c.effect:g}" for c in claim.comparisons)
    lines = [f"### {escape(claim.source.paper)} ({escape(claim.source.venue)}): {escape(claim.statement)}",
             f"Source: {escape(claim.source.quote)}.  \nProtocol: {escape(claim.protocol.describe())}.  \n"
             f"Asserted effect: {escape(effects)} ({escape(claim.effect_basis)}).  \nSeeds needed: {claim.seeds}." +
             (f"  \nVariant: {escape(claim.variant)}." if claim.variant else "")]
    if not findings:
        lines.append(f"**{UNDECIDABLE}**: no stored table with this protocol.")
    for table, finding in findings:
        seeds = (f" (fewer seeds than the claim needs: {finding.seeds} of {claim.seeds})"
                 if 0 < finding.seeds < claim.seeds else "")
        checked = [f"implementation: {len(claim.implementation)} tests of the loss formulas and metrics (listed "
                   f"below); they do not check {UNCHECKED}"] + finding.checked
        checked.append(convergence(calibrations, table.dataset, table.preset, table.scenario, finding.methods,
                                   _training_length(table)))
        why = f" ({why_undecidable(claim, table, finding)})" if finding.verdict == UNDECIDABLE else ""
        lines.append(f"**{finding.verdict}**{seeds} · {escape(table.dataset)} · {escape(table.preset)} · "
                     f"{escape(table.title)}: {escape(finding.ours + why)}\n\n<details><summary>What was checked</summary>\n\n" +
                     "\n".join(f"- {escape(c)}" for c in checked) + "\n\n</details>")
    return "\n\n".join(lines)


def untested_scales(tables: list[Table], planned: Sequence[PlannedScenario]) -> str:
    """The section naming each planned scenario that could test a claim but holds no stored records ("" if none)."""
    stored = {(t.preset, t.scenario) for t in tables}
    rows = []
    for scenario in planned:
        papers = [c.paper for c in CLAIMS if scenario.could_test(c)]
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
    """The section naming, per claim, the tests of the loss formulas and metrics its verdict uses."""
    lines = ["## Implementation tests: what each claim's code is tested against",
             "Run one with `pytest PATH::TEST`. Each compares a loss formula or a compatibility metric (AC, P_com) with "
             "something independent of the code (the paper's equation written out, a published number, a hand "
             f"computation). They do not check the choices that drive the verdicts: {UNCHECKED}; those are the "
             "configuration each claim names."]
    seen = set()
    for claim in CLAIMS:
        key = (claim.paper, claim.statement)
        if key in seen:
            continue
        seen.add(key)
        by_file: dict[str, list[str]] = {}
        for node in claim.implementation:
            path, test = node.split("::")
            by_file.setdefault(path, []).append(test)
        lines.append(f"- **{escape(claim.paper)}: {escape(claim.statement)}**: " + "; ".join(
            f"`{path}`: " + ", ".join(f"`{test}`" for test in tests) for path, tests in by_file.items()))
    return "\n\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:])
