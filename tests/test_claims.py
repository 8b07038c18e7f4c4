"""The claims report: claims as data (quotes checked against the papers' text, judged only on tables of their
protocol), and the verdict rule on synthetic replicates."""
from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import bootstrap, outcomes
from benchbackcompat.report.aggregate import build_tables
from benchbackcompat.report.calibration import convergence, read_calibrations
from benchbackcompat.report.claims import (CLAIMS, HOC, NOT_REPRODUCED, NOT_RUN, REPRODUCED, UNDECIDABLE, Comparison,
                                           PlannedScenario, Pick, claims_markdown, compare, judgements, verdict)
from benchbackcompat.cli.publish import planned_scenarios
from test_statistics import _single


def _sequence(method: str, hits: list[list[int | None]], n: int = 300, seed: int = 0, scenario: str = "multi-step",
              config: dict | None = None) -> dict:
    """A multi-step record whose C[t][k] is hits[t][k] of n queries (the first queries hit)."""
    T = len(hits)

    def encoded(k: int) -> dict:
        values = np.zeros(n, dtype=bool)
        values[:k] = True
        return outcomes.encode(values)

    C = [[100.0 * hits[t][k] / n if k <= t else None for k in range(T)] for t in range(T)]
    params = {"temperature": 1.0} if method in ("psp", "lsp") else {}  # the cpu preset's setting, which the claims name
    return {"status": "finished", "key": f"{scenario}{method}{seed}", "label": f"{scenario}/{method}/seed{seed}",
            "scenario": scenario, "kind": "multi-step",
            "dataset": "d", "preset": "p", "method": method, "params": params, "seed": seed,
            "config": {"metrics": ["cmc@1"], **(config or {})}, "metrics": {"cmc@1": {"AA": 0.0, "AC": 0.0, "ACA": 0.0}},
            "matrices": {"cmc@1": C}, "chance": {"cmc@1": 1.0},
            "outcomes": {"cmc@1": {"C": [[encoded(hits[t][k]) if k <= t else None for k in range(T)]
                                         for t in range(T)]}}}


def _claim(statement: str, variant: bool = False):
    return next(c for c in CLAIMS if c.statement == statement and bool(c.variant) == variant)


def _verdicts(records: list[dict], statement: str, variant: bool = False) -> list[str]:
    claim = _claim(statement, variant)
    return [claim.judge(t).verdict for t in build_tables(records) if claim.protocol.metric(t) is not None]


def _seeds(values: list[float], noise: float = 0.0) -> bootstrap.SeedSample:
    """Synthetic replicates: per-seed point values, each seed's query bootstrap normal with sd ``noise``."""
    rng = np.random.default_rng(1)
    per_seed = [v + noise * rng.standard_normal(bootstrap.REPLICATES) for v in values]
    return bootstrap.over_seeds(values, per_seed, list(range(len(values))))


# ------------------------------------------------------------------ the verdict rule (synthetic replicates)
HOC_ER = _claim("HOC's AC far above ER's")
T2 = 4.302653  # t(0.975, 2 degrees of freedom)


def _judged(values: list[float], effect: float) -> tuple[str, float, float]:
    low, high = bootstrap.interval(_seeds(values))
    return verdict(low, high, effect), low, high


def test_the_declared_effect_is_half_the_papers_difference():
    # HOC - ER AC: the paper claims 0.95 - 0 (Table 1); the claim declares half of it as its minimum effect
    assert HOC_ER.comparisons[0].effect == pytest.approx(0.95 / 2)


def test_a_narrow_interval_around_zero_excludes_the_claimed_effect():
    # three seeds -a, 0, a: s = a, half-width t_2 * a / sqrt(3) = 0.007
    a = 0.007 * math.sqrt(3) / T2
    result, low, high = _judged([-a, 0.0, a], HOC_ER.comparisons[0].effect)
    assert (low, high) == pytest.approx((-0.007, 0.007), abs=1e-6) and result == NOT_REPRODUCED


def test_a_wide_interval_spanning_zero_and_the_effect_is_undecidable():
    a = 0.6 * math.sqrt(3) / T2
    result, low, high = _judged([-a, 0.0, a], HOC_ER.comparisons[0].effect)
    assert (low, high) == pytest.approx((-0.6, 0.6), abs=1e-6) and result == UNDECIDABLE


def test_three_seeds_of_hbct_minus_no_entail_give_an_interval_containing_zero():
    # HBCT - hbct-no-entail P_com, ext-class at 12,000 steps, per seed, no query noise: t-interval [-0.24, 0.83]
    claim = _claim("HBCT's P_com above HBCT without the entailment loss (ext-class)")
    result, low, high = _judged([0.348, 0.481, 0.057], claim.comparisons[0].effect)
    assert low < 0 < high and (low, high) == pytest.approx((-0.243, 0.834), abs=1e-3)
    assert result == UNDECIDABLE


def test_a_clear_effect_above_the_declared_margin_is_reproduced():
    low, high = bootstrap.interval(_seeds([0.90, 0.95, 1.0], noise=0.01))
    assert low > HOC_ER.comparisons[0].effect
    assert verdict(low, high, HOC_ER.comparisons[0].effect) == REPRODUCED


def test_a_positive_effect_smaller_than_declared_is_not_reproduced():
    # above zero but entirely below the declared 0.475: the effect the paper claims is excluded
    assert verdict(0.05, 0.2, 0.475) == NOT_REPRODUCED and verdict(-0.1, float("nan"), 0.475) == UNDECIDABLE


# ------------------------------------------------------------------ quotes, transcribed once from the papers' text
PAPERS = {  # (paper, where) -> {name: number as printed}
    ("Stationary Representations", "Table 1"): {  # CIFAR100R/10, 7 tasks
        "d-Simplex-HOC AC": 0.95, "ER baseline AC (×)": 0.0, "d-Simplex-HOC AA_7": 68.13, "d-Simplex-FD AA_7": 56.58,
        "ER baseline AA_7": 36.22},
    ("A Stationary (and Therefore Compatible)", "Table VIII(b)"): {"λ = 0.10 AC": 0.90, "λ = 1 AC": 0.0},
    ("CoReS", "Sec. 5.1"): {"CoReS AC": 0.9, "BCT AC": 0.5},  # "scoring 0.9 versus 0.5 ... of AC" at 4 upgrades
    ("CoReS", "Table 1"): {"old self-test": 0.60, "BCT cross-test": 0.60, "CoReS cross-test": 0.61},
    ("Learning Along the Arrow of Time", "Ext-data"): {
        "ℓ2": 0.510, "BCT": 0.900, "Hot-Refresh": 0.693, "AdvBCT": 0.760, "HOC": 0.685, "HBCT w/o entail": 0.847,
        "HBCT": 0.956},
    ("Learning Along the Arrow of Time", "Ext-class"): {
        "ℓ2": 0.302, "BCT": 0.210, "Hot-Refresh": 0.360, "AdvBCT": 0.244, "HOC": 0.336, "HBCT w/o entail": 0.435,
        "HBCT": 0.495},
    ("Learning Along the Arrow of Time", "New-Arch"): {
        "ℓ2": 0.343, "BCT": 0.623, "Hot-Refresh": 0.517, "AdvBCT": 0.449, "HOC": 0.534, "HBCT w/o entail": -0.178,
        "HBCT": 0.937},
    ("Learning Along the Arrow of Time", "Both"): {
        "ℓ2": 0.185, "BCT": -0.054, "Hot-Refresh": 0.202, "AdvBCT": 0.245, "HOC": 0.116, "HBCT w/o entail": -0.487,
        "HBCT": 0.324},
    ("The Probability Simplex is Compatible", "Table 1(b)"): {"PSP AC": 0.90, "LSP AC": 1.0, "Baseline AC": 0.0},
}


def _transcribed(claim) -> dict[str, float]:
    found = [numbers for (paper, where), numbers in PAPERS.items()
             if claim.source.paper.startswith(paper) and where in claim.source.where]
    assert len(found) == 1, (claim.statement, claim.source.where)
    return found[0]


def test_every_quoted_number_is_the_papers():
    for claim in CLAIMS:
        transcribed = _transcribed(claim)
        for name, value in claim.source.numbers:
            assert transcribed[name] == value, (claim.statement, name)
        assert claim.source.quote.startswith(claim.source.where)


def test_the_corrected_quotes():
    # the lambda = 1 ablation is CL2R's (journal version, Table VIII(b), 16 tasks): 0 vs 0.90, judged on cl2r only
    ablation = _claim("λ = 1 (stationarity without HOC) is not compatible while HOC (λ = 0.1) is")
    assert ablation.protocol.kind == "cl2r" and "16 tasks" in ablation.source.where
    assert dict(ablation.source.numbers) == {"λ = 0.10 AC": 0.90, "λ = 1 AC": 0.0}
    # CoReS against BCT at 4 upgrades (the scenario's 5 models): 0.9 vs 0.5, not the 9-upgrade 0.51 vs 0.11
    cores = _claim("CoReS more compatible than BCT over many upgrades")
    assert "4 upgrades" in cores.source.where and dict(cores.source.numbers) == {"CoReS AC": 0.9, "BCT AC": 0.5}
    # BCT's one upgrade is Table 1's 0.60 vs 0.60 (0.59 vs 0.59 is Table 2, two upgrades)
    bct = _claim("BCT compatible after one upgrade (cross-test above the old self-test)")
    assert dict(bct.source.numbers)["BCT cross-test"] == 0.60 == dict(bct.source.numbers)["old self-test"]
    # HBCT ext-class: the best Euclidean P_com is Hot-Refresh 0.360, not HOC 0.336
    hbct = _claim("HBCT's P_com above each of the paper's Euclidean baselines (ext-class)")
    assert "Hot-Refresh 0.36" in hbct.effect_basis and hbct.comparisons[0].effect == pytest.approx((0.495 - 0.360) / 2)
    assert [c.b.method for c in hbct.comparisons] == ["l2", "bct", "hot-refresh", "advbct", "hoc-euclidean"]


# ------------------------------------------------------------------ protocols
def _protocol_of(table) -> tuple:
    config = table.config
    return (table.kind, config.get("protocol"), config.get("eval_split"), config.get("eval_classes", "all"))


def test_claims_are_judged_only_on_tables_of_their_protocol():
    hits = [[150], [180, 200], [190, 210, 240]]
    loo = {"protocol": "loo", "eval_split": "test"}
    records = [_sequence(m, hits, seed=s, config=loo) for m in ("psp", "independent", "cores", "bct") for s in (0, 1)]
    records += [_sequence(m, hits, seed=s, scenario="multi-step-seen", config={**loo, "eval_classes": "seen"})
                for m in ("psp", "independent") for s in (0, 1)]
    records += [_sequence(m, hits, seed=s, scenario="cores-open", config={"protocol": "verification",
                                                                          "eval_split": "open", "metrics": ["verification"]})
                for m in ("cores", "bct") for s in (0, 1)]
    for record in records[-4:]:  # verification entries score pairs
        record["metrics"] = {"verification": record["metrics"].pop("cmc@1")}
        record["matrices"] = {"verification": record["matrices"].pop("cmc@1")}
        record["outcomes"] = {"verification": record["outcomes"].pop("cmc@1")}
        record["chance"] = {"verification": 50.0}
    judged = {(claim.statement, claim.variant): [t.scenario for t, _ in findings] for claim, findings in judgements(build_tables(records))}
    assert judged[("PSP compatible on multi-step where independent encoders are not", "")] == ["multi-step"]
    seen = next(v for (s, variant), v in judged.items() if variant and s.startswith("PSP compatible") and "12" not in s)
    assert seen == ["multi-step-seen"]  # the Theorem-1 variant, apart from the paper's claim
    assert judged[("CoReS more compatible than BCT over many upgrades", "")] == ["cores-open"]  # open set only
    for claim, findings in judgements(build_tables(records)):
        for table, _ in findings:  # every table a claim is judged on has its declared protocol
            kind, protocol, split, classes = _protocol_of(table)
            assert (kind, split, classes) == (claim.protocol.kind, claim.protocol.eval_split, claim.protocol.classes)
            assert any(protocol == p and m in table.metrics for p, m in claim.protocol.retrieval)


def test_the_published_tables_are_judged_only_under_their_declared_protocol():
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent / "leaderboard" / "records" / "cells"
    records = [r for r in (json.loads(gzip.decompress(f.read_bytes())) for f in root.glob("*/record.json.gz"))
               if r.get("scenario") in ("iam-cl2r", "cl2r", "multi-step", "multi-step-seen")]
    assert records
    for claim, findings in judgements(build_tables(records)):
        for table, _ in findings:
            assert claim.protocol.metric(table) is not None
            assert _protocol_of(table)[2:] == (claim.protocol.eval_split, claim.protocol.classes)


# ------------------------------------------------------------------ findings on hand-made records
def test_ac_claims_from_brute_force_matrices():
    # PSP: every later model beats the earlier self-test (AC 1); independent: none does (AC 0); three seeds each
    statement = "PSP compatible on multi-step where independent encoders are not"
    psp = [_sequence("psp", [[150], [180, 200], [190, 210, 240]], seed=s) for s in range(3)]
    independent = [_sequence("independent", [[150], [10, 200], [5, 8, 240]], seed=s) for s in range(3)]
    for record in psp + independent:  # AC as the paper's formula, by hand
        record["metrics"]["cmc@1"]["AC"] = 1.0 if record["method"] == "psp" else 0.0
    assert _verdicts(psp + independent, statement) == [REPRODUCED]
    finding = _claim(statement).judge(build_tables(psp + independent)[0])
    # how far from compatible, by hand in points of 300 queries: psp (30 + 40 + 10) / 3, independent (-140 - 145 - 192) / 3
    assert finding.checked[-1].endswith(f"psp (temperature=1.0) {80 / 9:+.1f}, independent {-477 / 9:+.1f}")
    assert "self-tests at most 95%: yes" in finding.checked
    # LSP no more compatible than independent: the difference [0, 0] lies below the declared 0.5
    lsp = [_sequence("lsp", [[150], [10, 200], [5, 8, 240]], seed=s) for s in range(3)]
    assert _verdicts(lsp + independent, "LSP compatible on multi-step where independent encoders are not") == [NOT_REPRODUCED]
    # one seed: no seed-level interval, whatever the point values
    assert _verdicts(psp[:1] + independent[:1], statement) == [UNDECIDABLE]


def test_hbct_claims_need_a_decidable_update_and_every_baseline():
    n = 400

    def rows(method: str, cross: int, new: int = 300, ref_new: int = 300) -> list[dict]:
        return [_single(method, s, n, 200, new, cross + s, 200, ref_new) for s in range(3)]

    baselines = [r for m in ("l2", "bct", "hot-refresh", "advbct", "hoc-euclidean") for r in rows(m, 240)]
    decided = rows("hbct", 290) + rows("hbct-no-entail", 290) + baselines  # the ablation equal to HBCT: [0, 0]
    assert _verdicts(decided, "HBCT's P_com above each of the paper's Euclidean baselines (ext-class)") == [REPRODUCED]
    assert _verdicts(decided, "HBCT's P_com above HBCT without the entailment loss (ext-class)") == [NOT_REPRODUCED]
    # a baseline missing: the others cannot make the claim reproduced
    partial = [r for r in decided if r["method"] != "advbct"]
    finding = _claim("HBCT's P_com above each of the paper's Euclidean baselines (ext-class)").judge(build_tables(partial)[0])
    assert finding.verdict == UNDECIDABLE and finding.ours.endswith("not run here: advbct")
    small = rows("hbct", 209, 210, 208) + rows("l2", 201, 210, 208)
    finding = _claim("HBCT's P_com above HBCT without the entailment loss (ext-class)").judge(build_tables(small)[0])
    assert finding.verdict == UNDECIDABLE and finding.ours == NOT_RUN


def test_one_upgrade_claims_compare_the_cross_test_with_the_old_self_test_on_open_classes():
    # the Empirical Compatibility Criterion on CoReS's open-set protocol: an ext-class table scored on open classes
    n, statement = 400, "BCT compatible after one upgrade (cross-test above the old self-test)"
    open_set = {"protocol": "loo", "eval_split": "open", "metrics": ["cmc@1"]}

    def bct(cross: int) -> list[dict]:
        records = [_single("bct", s, n, 200, 300, cross + 2 * s, 200, 300) for s in range(3)]
        for record in records:
            record["config"] = open_set
        return records

    assert _verdicts(bct(240), statement) == [REPRODUCED]  # 60-61% against 50%, by hand
    assert _verdicts(bct(199), statement) == [UNDECIDABLE]  # -0.25 .. +0.75 points around the old self-test
    assert _verdicts(bct(150), statement) == [NOT_REPRODUCED]
    assert _verdicts([_single("bct", s, n, 200, 300, 240, 200, 300) for s in range(3)], statement) == []  # closed set


def test_hoc_claims_take_the_published_lambda_when_an_ablation_shares_the_table():
    # HOC's lambda = 1 ablation is more compatible here (AC 1 by hand) than HOC at the published lambda = 0.1
    # (AC 1/3), so it ranks first; the claims must still read the lambda = 0.1 row
    def iam(lam: float, hits: list[list[int]]) -> dict:
        record = _sequence("hoc", hits)
        record.update(scenario="iam-cl2r", kind="iam-cl2r", key=f"hoc{lam}", params={"lam": lam})
        record["metrics"]["cmc@1"]["AC"] = 1.0 if lam == 1.0 else 1 / 3  # the paper's formula, by hand
        return record
    table = build_tables([iam(1.0, [[150], [180, 200], [190, 210, 240]]),
                          iam(0.1, [[150], [180, 200], [5, 8, 240]])])[0]
    assert table.rows[0].params["lam"] == 1.0
    assert HOC.find(table).params["lam"] == 0.1
    # a pick without hyperparameters cannot tell which of the two settings is the default: no row, and why
    assert Pick("hoc").find(table) is None
    finding = compare(table, "cmc@1", Comparison(Pick("hoc"), HOC, "AC", 0.5))
    assert finding.verdict == UNDECIDABLE
    assert finding.checked == ["records: 2 settings of hoc here (hoc (lam=1.0), hoc (lam=0.1)); the claim names none"]


# ------------------------------------------------------------------ the page
def test_the_page_opens_with_the_tally_and_folds_the_checks():
    psp = [_sequence("psp", [[150], [180, 200], [190, 210, 240]], seed=s) for s in range(3)]
    independent = [_sequence("independent", [[150], [10, 200], [5, 8, 240]], seed=s) for s in range(3)]
    for record in psp:
        record["metrics"]["cmc@1"]["AC"] = 1.0  # by hand: every cross-test above its gallery's self-test
    text = claims_markdown(build_tables(psp + independent), "> header")
    first = text.split("\n\n")[2]
    assert first.startswith(f"Paper claims: **1** reproduced · **0** not reproduced · **0** undecidable (1 verdicts, one "
                            f"per claim and table; {sum(not c.variant for c in CLAIMS) - 1} claims untested"), first
    line = next(x for x in text.splitlines() if x.startswith("**reproduced**"))
    assert "· d · p · multi-step: psp (temperature=1.0)" in line
    assert text.count("<details><summary>What was checked</summary>") == 4  # psp and lsp at 1 and 12 (3 not run)
    assert "no stored table with this protocol" in text
    assert "bugs excluded" not in text.lower() and "## Implementation tests" in text
    # two seeds against the three the claim needs: said next to the verdict
    text = claims_markdown(build_tables(psp[:2] + independent[:2]), "> header")
    assert "(fewer seeds than the claim needs: 2 of 3)" in text


def test_the_summary_gives_one_line_per_claim_with_its_verdict_and_why_it_is_undecidable():
    n = 400

    def rows(method: str, cross: int, ref_new: int) -> list[dict]:
        return [_single(method, s, n, 200, 300, cross + s, 200, ref_new) for s in range(3)]

    # ext-class: HBCT's update 2 points (8 queries of 400): P_com hidden for hbct only; its ablation decidable
    records = rows("hbct", 205, 208) + rows("hbct-no-entail", 290, 300)
    text = claims_markdown(build_tables(records), "> header")
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in summary.splitlines() if line.startswith("- ")]
    assert len(lines) == len(CLAIMS)  # one line per claim, paper claims and variants
    ablation = next(line for line in lines if "HBCT without the entailment loss (ext-class)" in line)
    assert ablation.endswith(": **undecidable** on ext-class (P\\_com not shown: update &lt; 10 pts for hbct)")
    untested = next(line for line in lines if "(new-arch)" in line)
    assert untested.endswith("**untested** (no stored table of its protocol)")
    baselines = next(line for line in lines if "Euclidean baselines (ext-class)" in line)
    assert baselines.endswith("**untested** (its rows were not run in the tables of its protocol)")
    # the finding's own line says why too, not only its folded checks
    assert "hbct: – (P\\_com not shown: update &lt; 10 pts for hbct)\n" in text


def test_report_names_planned_scenarios_without_records():
    planned = [PlannedScenario("p", "multi-step", "multi-step", "d"),
               PlannedScenario("p", "ext-class-tin", "ext-class", "tin",
                               (("protocol", "loo"), ("eval_split", "test"), ("metrics", ["cmc@1", "map"]))),
               PlannedScenario("p", "zoo", "model-zoo", "d")]
    text = claims_markdown(build_tables([_sequence("psp", [[150], [180, 200]])]), "> header", planned=planned)
    section = text.split("## Not tested")[1].split("## Implementation tests")[0]
    rows = [line for line in section.splitlines() if line.startswith("| p ·")]
    # multi-step has a table and the zoo tests no claim; ext-class on the test split tests HBCT's two claims, not
    # the one-upgrade claims of CoReS (open classes)
    assert rows == ["| p · ext-class-tin | tin | Learning Along the Arrow of Time: Hyperbolic Geometry for "
                    "Backward-Compatible Representation Learning (2) | "
                    "`benchbackcompat run --preset p --scenario ext-class-tin` |"]
    assert "## Not tested" not in claims_markdown(build_tables([_sequence("psp", [[150], [180, 200]])]), "> header")


def test_planned_scenarios_come_from_the_named_preset():
    planned = {(p.preset, p.scenario): p for p in planned_scenarios({"cpu", "no-such-preset"})}
    assert planned[("cpu", "ext-class-tin")].kind == "ext-class"
    assert dict(planned[("cpu", "multi-step-seen")].config)["eval_classes"] == "seen"
    assert {p for p, _ in planned} == {"cpu"}


def test_a_broken_preset_file_leaves_the_untested_list_out_with_a_warning(tmp_path, monkeypatch, caplog):
    (tmp_path / "mine.toml").write_text("[scenarios\n")
    monkeypatch.setenv("BENCHBACKCOMPAT_PRESETS", str(tmp_path))
    assert planned_scenarios({"mine"}) == []
    assert "untested scenarios of 'mine' not listed" in caplog.text


def test_claims_name_the_measured_convergence_of_their_scenario(tmp_path):
    # independent moved 70.9 -> 71.8 (old) and 88.7 -> 90.0 (reference): 1.3 points at most, within 2
    cells = [{"scenario": "ext-class", "method": "independent", "seed": 0,
              "self_tests": {"old_self": [70.9, 71.8], "reference_self": [88.7, 90.0]}},
             {"scenario": "multi-step", "method": "independent", "seed": 0,
              "self_tests": {"model 0": [43.5, 46.1], "model 1": [60.5, 65.2]}}]
    folder = tmp_path / "calibration"
    folder.mkdir()
    (folder / "cpu.json").write_text(json.dumps({"preset": "p", "dataset": "d", "metric": "cmc@1", "epochs": [90, 135],
                                                 "tolerance": 2.0, "command": "benchbackcompat calibrate",
                                                 "cells": cells}))
    calibrations = read_calibrations([tmp_path])
    assert convergence(calibrations, "d", "p", "ext-class") == (
        "training converged: yes (90 -> 135 epochs moved the self-tests of independent 1.3 points at most, seed 0; "
        "tolerance 2)")
    assert convergence(calibrations, "d", "p", "multi-step").startswith("training converged: no (")  # 4.7 > 2
    assert "not measured" in convergence(calibrations, "d", "p", "both")
    assert "not measured" in convergence(calibrations, "other", "p", "ext-class")
    text = claims_markdown(build_tables([_single("bct", 0, 400, 200, 300, 240, 200, 300)]), "> header", calibrations)
    assert "training converged: yes (90 -> 135 epochs" in text
    floored = {"preset": "q", "dataset": "d", "metric": "cmc@1", "epochs": [90, 135], "min_steps": [4000, 6000],
               "tolerance": 2.0, "command": "c", "cells": cells[1:]}
    (folder / "floored.json").write_text(json.dumps(floored))
    assert convergence(read_calibrations([tmp_path]), "d", "q", "multi-step") == (
        "training converged: no (90 -> 135 epochs (at least 4,000 -> 6,000 steps) moved the self-tests of "
        "independent 4.7 points at most, seed 0; tolerance 2)")


def test_a_broken_calibration_summary_is_a_one_line_error(tmp_path):
    (tmp_path / "calibration").mkdir()
    (tmp_path / "calibration" / "cpu.json").write_text('{"preset": "p"}')
    with pytest.raises(BenchError, match=r"calibration/cpu.json: not a calibration summary .*calibrate --summary"):
        read_calibrations([tmp_path])


def test_every_claim_names_tests_that_exist_and_the_report_lists_them():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for claim in CLAIMS:
        assert claim.implementation, claim.statement
        for node in claim.implementation:
            path, name = node.split("::")
            tree = ast.parse((root / path).read_text())
            assert name in {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}, node
    text = claims_markdown([], "header")
    path, test = CLAIMS[0].implementation[0].split("::")
    assert "## Implementation tests" in text and f"`{path}`: `{test}`" in text


def test_a_calibration_judges_only_tables_trained_at_its_starting_length(tmp_path):
    # calibrated 4,000 -> 6,000 steps: it says nothing about a table whose models trained 12,000 steps
    cells = [{"scenario": "ext-class", "method": "independent", "seed": 0,
              "self_tests": {"old_self": [70.9, 71.8], "reference_self": [88.7, 90.0]}}]
    folder = tmp_path / "calibration"
    folder.mkdir()
    (folder / "floor.json").write_text(json.dumps({
        "preset": "p", "dataset": "d", "metric": "cmc@1", "epochs": [90, 135], "min_steps": [4000, 6000],
        "tolerance": 2.0, "command": "c", "cells": cells}))
    calibrations = read_calibrations([tmp_path])
    assert convergence(calibrations, "d", "p", "ext-class", length=(90, 4000)).startswith("training converged: yes (")
    assert convergence(calibrations, "d", "p", "ext-class", length=(90, 12000)) == (
        "training converged: not measured at this table's length (90 epochs, at least 12,000 steps; "
        "calibrated from 90 epochs, at least 4,000 steps)")
    floor, longer = (_single("bct", 0, 400, 200, 300, 240, 200, 300) for _ in range(2))
    floor["config"]["train"] = {"epochs": 90, "min_steps": 4000}
    longer["config"]["train"] = {"epochs": 90, "min_steps": 12000}
    longer["key"] = "bct-longer"
    text = claims_markdown(build_tables([floor, longer]), "> header", calibrations)
    assert "min\\_steps=4000)" in text and "min\\_steps=12000)" in text  # two tables, escaped for Markdown
    claims_per_table = 2  # HBCT's two claims test an ext-class table on the test split (CoReS's need open classes)
    assert text.count("training converged: yes (") == claims_per_table
    assert text.count("training converged: not measured at this table's length") == claims_per_table


def _iam(method: str, diagonal_hits: list[int], seed: int, params: dict) -> dict:
    """An iam-cl2r record of 4 tasks (pretrained models at tasks 1 and 3) whose self-tests are ``diagonal_hits`` of
    300 queries and whose every cross-test is its gallery's self-test plus 30 queries (all compatible)."""
    hits = [[diagonal_hits[k] + (30 if k < t else 0) if k <= t else None for k in range(4)] for t in range(4)]
    record = _sequence(method, hits, seed=seed, scenario="iam-cl2r",
                       config={"kind": "iam-cl2r", "protocol": "template", "eval_split": "open", "metrics": ["top1"]})
    record.update(kind="iam-cl2r", params=params,
                  steps=[{"index": i, "init": init} for i, init in enumerate(("pretrained", "previous", "pretrained", "previous"))])
    for field in ("matrices", "outcomes", "metrics", "chance"):
        record[field] = {"top1": record[field]["cmc@1"]}
    return record


@pytest.mark.parametrize(("moves", "premise"), [((150, 153, 180, 182), "no (mean self-test change over a run of "
                                                  "fine-tuning +0.8 points (12 runs; at least +2 needed))"),
                                                 ((150, 170, 180, 200), "yes")])
def test_iam_claims_are_undecidable_where_fine_tuning_does_not_improve_the_pretrained_models(moves, premise):
    # runs of fine-tuning: tasks 1-2 and 3-4 of 6 records; (153 - 150) / 3 = +1 point and (182 - 180) / 3 = +0.67: mean +0.83
    records = [_iam(m, list(moves), seed, {"lam": 0.1} if m == "hoc" else {}) for m in ("hoc", "er") for seed in (0, 1, 2)]
    for record in records:
        if record["method"] == "er":  # ER's later models are below its galleries: AC 0
            record["matrices"]["top1"] = [[c - 20.0 if c is not None and k < t else c for k, c in enumerate(row)]
                                          for t, row in enumerate(record["matrices"]["top1"])]
    claim = _claim("HOC's AC far above ER's")
    (table,) = build_tables(records)
    finding = claim.judge(table)
    assert finding.checked[0].startswith(f"premise, fine-tuning on the task data improves the models pretrained "
                                         f"elsewhere: {premise}")
    assert finding.verdict == (UNDECIDABLE if premise.startswith("no") else finding.verdict)
