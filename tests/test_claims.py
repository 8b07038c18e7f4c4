"""The claims engine (``report.claims``): claims files read and checked, claims judged on hand-made tables whose
per-seed values are set by hand (verdicts, absences, several comparisons, protocol and setting, the deciding table,
premises), the exact sign-flip test by enumeration, and the ``claims.md`` page. A claims file's checks beyond loading
are in ``test_claims_files.py``; the study's own claims files are checked in studies/cpu-scale/tests."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from benchbackcompat.cli import main
from benchbackcompat.cli.publish import planned_scenarios
from benchbackcompat.errors import BenchError
from benchbackcompat.overrides import format_override, parse_override
from benchbackcompat.metrics import outcomes
from benchbackcompat.metrics.sign_flip import seeds_to_reach, sign_flip_p, smallest_p
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.table_data import Missing
from benchbackcompat.report.calibration import convergence, read_calibrations
from benchbackcompat.report.claims import Claim, PlannedScenario, claims_pages, judge, load_all, load_claims
from benchbackcompat.report.claims.runs import declared_runs
from test_statistics import _single

T5 = 2.570582  # t(0.975, 5 degrees of freedom): six seeds
SE_345 = math.sqrt(0.8 / 6)  # differences 3, 4, 5, 3, 4, 5 (or -1, 0, 1, ...): sample variance 4 / 5, six seeds
EXT_CLASS = {"kind": "ext-class", "retrieval": [["loo", "cmc@1"]], "eval_split": "test"}  # the kind's defaults


def _sequence(method: str, hits: list[list[int | None]], n: int = 300, seed: int = 0, scenario: str = "multi-step",
              config: dict | None = None) -> dict:
    """A multi-step record whose C[t][k] is hits[t][k] of n queries (the first queries hit)."""
    T = len(hits)

    def encoded(k: int) -> dict:
        values = np.zeros(n, dtype=bool)
        values[:k] = True
        return outcomes.encode(values)

    C = [[100.0 * hits[t][k] / n if k <= t else None for k in range(T)] for t in range(T)]
    return {"status": "finished", "key": f"{scenario}{method}{seed}", "label": f"{scenario}/{method}/seed{seed}",
            "scenario": scenario, "kind": "multi-step",
            "dataset": "d", "preset": "p", "method": method, "params": {}, "seed": seed,
            "config": {"metrics": ["cmc@1"], **(config or {})}, "metrics": {"cmc@1": {"AA": 0.0, "AC": 0.0, "ACA": 0.0}},
            "matrices": {"cmc@1": C}, "chance": {"cmc@1": 1.0},
            "outcomes": {"cmc@1": {"C": [[encoded(hits[t][k]) if k <= t else None for k in range(T)]
                                         for t in range(T)]}}}


def _one(method: str, seed: int, cross: float, old: float = 50.0, scenario: str = "ext-class", dataset: str = "d",
         config: dict | None = None) -> dict:
    """A single-update record whose cross and old self-test (points) are set by hand. Every record's cross-test and
    old self-test hit the same 200 of 400 queries, so the paired differences (of two rows' cross-tests, or of a row's
    cross-test and old self-test) have no within-seed noise: their interval is the t-interval of the hand-set values."""
    record = _single(method, seed, 400, 200, 300, 200, 200, 300)
    record["metrics"]["cmc@1"].update(cross=cross, old_self=old)
    record.update(scenario=scenario, dataset=dataset, key=f"{scenario}{dataset}{method}{seed}{json.dumps(config)}")
    record["config"] = {"metrics": ["cmc@1"], **(config or {})}
    return record


def _ac(method: str, seed: int, ac: float, scenario: str = "multi-step") -> dict:
    """A three-model multi-step record of AC ``ac`` (set by hand); every entry hits the same 150 of 300 queries,
    so no resample moves its AC (no within-seed noise)."""
    record = _sequence(method, [[150], [150, 150], [150, 150, 150]], seed=seed, scenario=scenario)
    record["metrics"]["cmc@1"]["AC"] = ac
    return record


def _pair(differences: list[float], seeds: range | list[int] | None = None, **where) -> list[dict]:
    """Rows a and b whose cross-tests differ by ``differences`` (points), seed by seed."""
    seeds = range(len(differences)) if seeds is None else seeds
    return [_one("a", s, 50.0 + d, **where) for s, d in zip(seeds, differences)] + [_one("b", s, 50.0, **where)
                                                                                      for s in seeds]


def _claim(**fields) -> Claim:
    declared = {"id": "c", "statement": "a above b", "where": "Table 1", "seeds": 6, "deciding": "ext-class",
                "protocol": EXT_CLASS, "compare": [{"a": "a", "b": "b", "statistic": "cross", "effect": 2.0}]}
    return Claim.model_validate({**declared, **fields})


# ------------------------------------------------------------------ the exact sign-flip test, by enumeration
def test_sign_flip_p_by_hand():
    # [1, 2, 3]: of the 8 sign assignments only +++ and --- reach |mean| 2
    assert sign_flip_p(np.array([1.0, 2.0, 3.0])) == pytest.approx(2 / 8)
    assert sign_flip_p(np.array([1.0, -1.0])) == 1.0  # observed mean 0: every assignment is at least as far
    assert sign_flip_p(np.full(6, 0.5)) == pytest.approx(2 / 64)
    assert sign_flip_p(np.zeros(6), null=0.1) == pytest.approx(2 / 64)  # six values 0.1 below the null
    assert math.isnan(sign_flip_p(np.array([])))
    # [1, 1, -1]: observed |mean| 1/3; every assignment's |mean| is 1/3 or 1: 8 of 8
    assert sign_flip_p(np.array([1.0, 1.0, -1.0])) == 1.0
    assert smallest_p(6) == pytest.approx(1 / 32) and smallest_p(5) == pytest.approx(1 / 16)
    assert seeds_to_reach(0.05) == 6 and seeds_to_reach(0.01) == 8 and seeds_to_reach(0.025) == 7


# ------------------------------------------------------------------ the verdict rule, six seeds set by hand
def test_an_interval_above_zero_reaching_the_effect_is_reproduced():
    (test,) = judge(_claim(), build_tables(_pair([3, 4, 5, 3, 4, 5]))).findings[0].tests
    # mean 4, t-interval 4 ± 2.5706 sqrt(0.8 / 6) = [3.061, 4.939]; all six positive: p = 2/64
    assert test.verdict == "reproduced" and test.estimate == pytest.approx(4.0)
    assert test.interval == pytest.approx((4 - T5 * SE_345, 4 + T5 * SE_345), abs=1e-5)
    assert test.p == pytest.approx(1 / 32) and test.seeds == tuple(range(6))


def test_an_interval_above_zero_below_the_effect_is_a_smaller_effect_not_reproduced():
    judgement = judge(_claim(compare=[{"a": "a", "b": "b", "statistic": "cross", "effect": 5.0}]),
                      build_tables(_pair([3, 4, 5, 3, 4, 5])))
    assert judgement.verdict == "same direction, smaller effect"  # 4 < 5 with the interval above 0: not reproduced


def test_an_interval_entirely_below_the_effect_is_not_reproduced():
    judgement = judge(_claim(), build_tables(_pair([-1, 0, 1, -1, 0, 1])))
    (test,) = judgement.findings[0].tests
    # [-0.939, 0.939] below 2, not above 0; differences - 2 all negative: p = 2/64 against the effect
    assert judgement.verdict == "not reproduced" and test.interval[1] == pytest.approx(T5 * SE_345, abs=1e-5)
    assert test.p == pytest.approx(1 / 32)


def test_an_interval_spanning_zero_and_the_effect_is_undecidable():
    # -3, 3, ...: mean 0, s² = 54 / 5, half-width 2.5706 sqrt(10.8 / 6) = 3.449: spans 0 and 2
    judgement = judge(_claim(), build_tables(_pair([-3, 3, -3, 3, -3, 3])))
    assert judgement.verdict == "undecidable" and judgement.reason == "the interval spans 0 and the declared effect"
    assert judgement.findings[0].tests[0].interval == pytest.approx((-T5 * math.sqrt(10.8 / 6), T5 * math.sqrt(10.8 / 6)),
                                                                     abs=1e-5)


def test_fewer_seeds_than_declared_leave_the_claim_untested_naming_the_missing_seed():
    records = [r for r in _pair([3, 4, 5, 3, 4, 5]) if not (r["method"] == "a" and r["seed"] == 3)]
    judgement = judge(_claim(), build_tables(records))
    # the declared run is not complete: no verdict yet; the deciding table's finding names the missing seed
    assert judgement.verdict == "not run yet"
    assert judgement.reason == "its declared run is not complete (of the 6 declared seeds: a 5)"
    assert judgement.findings[0].verdict == "undecidable"
    assert judgement.findings[0].reason == "5 of the 6 declared seeds finished (missing: 3)"
    # a compared row not run at all is incomplete too
    only_a = judge(_claim(), build_tables([r for r in _pair([3, 4, 5, 3, 4, 5]) if r["method"] == "a"]))
    assert only_a.verdict == "not run yet" and only_a.reason == "its declared run is not complete (not run: b)"
    half_a = judge(_claim(), build_tables([r for r in _pair([3, 4, 5]) if r["method"] == "a"]))
    assert half_a.reason == "its declared run is not complete (of the 6 declared seeds: a 3; not run: b)"


def test_a_row_with_several_settings_the_claim_does_not_name_is_undecidable_not_untested():
    records = _pair([3, 4, 5, 3, 4, 5])
    for temperature in (1.0, 12.0):  # two settings of b, each at all six seeds
        for record in [dict(r, params={"temperature": temperature}) for r in records if r["method"] == "b"]:
            records.append(dict(record, key=f"{record['key']}{temperature}"))
    records = [r for r in records if not (r["method"] == "b" and not r["params"])]
    judgement = judge(_claim(), build_tables(records))
    assert judgement.verdict == "undecidable" and "2 settings of b here" in judgement.reason


def test_a_seed_beyond_the_declared_ones_is_ignored():
    six = judge(_claim(), build_tables(_pair([3, 4, 5, 3, 4, 5]))).findings[0].tests[0]
    seven = judge(_claim(), build_tables(_pair([3, 4, 5, 3, 4, 5, -40]))).findings[0].tests[0]  # seed 6: far below
    assert (seven.verdict, seven.estimate, seven.interval, seven.p, seven.seeds) == (
        six.verdict, six.estimate, six.interval, six.p, six.seeds)
    assert seven.shown == six.shown  # the rows' values beside the test are those of the declared seeds too


def _p_com_rows(updates: list[int], crosses: list[int]) -> list[dict]:
    """Rows a and b on 400 queries, old self-test 200 hits; seed s's reference self-test ``updates[s]`` hits above it
    (a 4-hit update is one point), a's cross-test ``crosses[s]`` hits, b's the old self-test's (P_com 0)."""
    rows = []
    for seed, (update, cross) in enumerate(zip(updates, crosses)):
        rows += [_single(m, seed, 400, 200, 200 + update, c, 200, 200 + update) for m, c in (("a", cross), ("b", 200))]
    return rows


def _p_com_shown(records: list[dict]) -> bool:
    return not isinstance(build_tables(records)[0].rows[0].cells["cmc@1:p_com"], Missing)


def test_p_com_is_shown_or_hidden_by_the_update_over_the_declared_seeds_only():
    claim = _claim(compare=[{"a": "a", "b": "b", "statistic": "p_com", "effect": 0.1}])
    # seeds 0-5: a 12-point update (48 hits), a's P_com (55 - 50) / 12, 6 / 12, 7 / 12; seed 6: old self-test 75%,
    # reference 20%, a 55-point drop
    extra = _p_com_rows([48] * 6, [220, 224, 228] * 2) + [_single(m, 6, 400, 300, 300, 300, 300, 80) for m in "ab"]
    assert not _p_com_shown(extra)  # over seeds 0-6 the update is (6 x 12 - 55) / 7 points
    (test,) = judge(claim, build_tables(extra)).findings[0].tests
    assert test.verdict == "reproduced" and test.seeds == tuple(range(6))
    assert test.estimate == pytest.approx(0.5)  # P_com 5/12, 6/12, 7/12 against 0
    assert test.p == pytest.approx(2 / 64)
    # an 8-point update over the declared seeds hides P_com, though six more seeds of 20 points bring the table to 14
    small = _p_com_rows([32] * 6 + [80] * 6, [212] * 12)
    assert _p_com_shown(small)
    (test,) = judge(claim, build_tables(small)).findings[0].tests
    assert test.verdict == "undecidable" and test.reason.startswith(
        "P_com not shown for a on the declared seeds: the update it divides by, reference self − old self = 8.00 [")
    assert test.reason.endswith("points, is below the minimum of 10 points")


def test_a_claim_already_undecidable_for_a_row_with_all_its_declared_seeds_is_not_left_untested():
    claim = _claim(compare=[{"a": "a", "b": "b", "statistic": "p_com", "effect": 0.1}])
    hidden = [r for r in _p_com_rows([32] * 6, [212] * 6) if r["method"] == "a" or r["seed"] < 3]  # b: seeds 0-2
    judgement = judge(claim, build_tables(hidden))
    assert judgement.verdict == "undecidable" and "settled by a at all its declared seeds" in judgement.reason
    assert "not complete: of the 6 declared seeds: b 3" in judgement.reason
    shown = [r for r in _p_com_rows([48] * 6, [212] * 6) if r["method"] == "a" or r["seed"] < 3]
    assert judge(claim, build_tables(shown)).verdict == "not run yet"  # b's missing seeds could decide it
    a_short = ([r for r in _p_com_rows([32] * 3, [212] * 3) if r["method"] == "a"] +
               [r for r in _p_com_rows([48] * 6, [212] * 6) if r["method"] == "b"])
    assert judge(claim, build_tables(a_short)).verdict == "not run yet"  # a's own missing seeds could lift its update


# ------------------------------------------------------------------ absences
ABSENT_AC = {"compare": [], "protocol": {"kind": "multi-step", "retrieval": [["loo", "cmc@1"]], "eval_split": "test"},
             "deciding": "multi-step", "absent": [{"method": "independent", "statistic": "AC", "margin": 0.1}]}


def test_an_absence_holds_when_the_interval_lies_below_the_margin():
    # AC 0, 0.01, 0.02 twice: mean 0.01, half-width 2.5706 sqrt(0.00008 / 6) = 0.0094 -> [0.0006, 0.0194] < 0.1;
    # every value below 0.1: p = 2/64 against the margin
    judgement = judge(_claim(**ABSENT_AC), build_tables([_ac("independent", s, [0, 0.01, 0.02][s % 3]) for s in range(6)]))
    (test,) = judgement.findings[0].tests
    assert judgement.verdict == "reproduced" and test.p == pytest.approx(1 / 32)
    assert test.interval == pytest.approx((0.01 - T5 * math.sqrt(8e-5 / 6), 0.01 + T5 * math.sqrt(8e-5 / 6)), abs=1e-6)
    high = judge(_claim(**ABSENT_AC), build_tables([_ac("independent", s, [0.88, 0.9, 0.92][s % 3]) for s in range(6)]))
    assert high.verdict == "not reproduced"


def test_an_absence_of_the_cross_test_above_the_old_self_test_on_one_update():
    claim = _claim(compare=[], absent=[{"method": "independent", "statistic": "cross-old_self", "margin": 0.0}])
    below = [_one("independent", s, cross=50.0 - [5, 6, 7][s % 3]) for s in range(6)]  # 5-7 points below: holds
    judgement = judge(claim, build_tables(below))
    assert judgement.verdict == "reproduced" and judgement.findings[0].tests[0].estimate == pytest.approx(-6.0)
    above = [_one("independent", s, cross=50.0 + [5, 6, 7][s % 3]) for s in range(6)]
    assert judge(claim, build_tables(above)).verdict == "not reproduced"


# ------------------------------------------------------------------ several comparisons
TWO = [{"a": "a", "b": "b", "statistic": "cross", "effect": 2.0}, {"a": "a", "b": "c", "statistic": "cross", "effect": 2.0}]


def _three(a_minus_c: list[float]) -> list[dict]:
    """Rows a, b, c: a − b = 3, 4, 5, ... points; a − c as given."""
    a_minus_b = [3, 4, 5, 3, 4, 5, 4][:len(a_minus_c)]
    return _pair(a_minus_b) + [_one("c", s, 50.0 + ab - ac) for s, (ab, ac) in enumerate(zip(a_minus_b, a_minus_c))]


def test_several_comparisons_hold_when_all_hold_and_fail_when_one_fails():
    assert judge(_claim(compare=TWO), build_tables(_three([3, 4, 5, 3, 4, 5]))).verdict == "reproduced"
    # seven seeds: a − c = -1, 0, 1, -1, 0, 1, 0 lies below 2 at the Bonferroni level (p = 2/128 <= 0.025)
    failed = judge(_claim(compare=TWO, seeds=7), build_tables(_three([-1, 0, 1, -1, 0, 1, 0])))
    assert failed.verdict == "not reproduced"
    assert [t.verdict for t in failed.findings[0].tests] == ["reproduced", "not reproduced"]
    assert failed.findings[0].tests[1].p == pytest.approx(2 / 128)


def test_six_seeds_cannot_fail_one_of_two_comparisons_at_the_bonferroni_level():
    # the failing comparison needs p <= 0.05 / 2 = 0.025; six seeds give at best 2/64 = 0.03125; the holding
    # comparison is decided at 0.05 (p = 0.03125): reproduced
    judgement = judge(_claim(compare=TWO), build_tables(_three([-1, 0, 1, -1, 0, 1])))
    holds, fails = judgement.findings[0].tests
    assert holds.verdict == "reproduced" and holds.p == pytest.approx(1 / 32)
    assert fails.verdict == "undecidable" and judgement.verdict == "undecidable"
    assert judgement.reason == "the exact test cannot reach p ≤ 0.025 with 6 seeds (at best 0.0312; 7 needed)"


# ------------------------------------------------------------------ protocol, setting, deciding table
def test_only_tables_of_the_claims_protocol_are_judged():
    records = _pair([3, 4, 5, 3, 4, 5]) + _pair([3, 4, 5, 3, 4, 5], scenario="ext-class-open",
                                                config={"eval_split": "open"})
    records += [_ac("independent", s, 0.0) for s in range(6)]  # another kind
    judgement = judge(_claim(), build_tables(records))
    assert [f.table.scenario for f in judgement.findings] == ["ext-class"]
    open_claim = _claim(protocol={**EXT_CLASS, "eval_split": "open"}, deciding="ext-class-open")
    assert [f.table.scenario for f in judge(open_claim, build_tables(records)).findings] == ["ext-class-open"]


def test_a_table_of_the_protocol_without_any_of_the_claims_rows_is_not_shown():
    short, long = ({"train": {"epochs": 90, "min_steps": steps}} for steps in (4000, 12000))
    records = _pair([3, 4, 5, 3, 4, 5], config=short) + [_one("other", s, 50.0, config=long) for s in range(6)]
    judgement = judge(_claim(deciding_config={"train.min_steps": 4000}), build_tables(records))
    assert len(build_tables(records)) == 2 and [f.role for f in judgement.findings] == ["deciding"]
    # once one of its rows ran there, the table supports
    records += [_one("a", s, 50.0, config=long) for s in range(6)]
    judgement = judge(_claim(deciding_config={"train.min_steps": 4000}), build_tables(records))
    assert [f.role for f in judgement.findings] == ["deciding", "supporting"]


def test_a_table_of_another_setting_supports_naming_the_difference_and_never_decides():
    protocol = {**EXT_CLASS, "models": 2, "datasets": ["cifar100", "embedded"]}
    records = _pair([3, 4, 5, 3, 4, 5], dataset="cifar100") + _pair([-1, 0, 1, -1, 0, 1], dataset="tin",
                                                                    scenario="ext-class-tin")
    judgement = judge(_claim(protocol=protocol), build_tables(records))
    assert [(f.role, f.table.dataset, f.verdict) for f in judgement.findings] == [
        ("deciding", "cifar100", "reproduced"), ("supporting, other setting", "tin", "not reproduced")]
    assert judgement.findings[1].differences == ["dataset tin, the paper's cifar100"]
    assert judgement.verdict == "reproduced"
    # three models declared: the only table has two; it is shown but gives no verdict
    three = judge(_claim(protocol={**protocol, "models": 3}), build_tables(_pair([3, 4, 5, 3, 4, 5], dataset="cifar100")))
    assert [f.role for f in three.findings] == ["supporting, other setting"]
    assert three.findings[0].differences == ["2 models, the paper's 3"]
    assert three.verdict == "not run yet" and three.reason.endswith("differs from the paper's setting: 2 models, the paper's 3")


def test_the_declared_configuration_picks_the_deciding_table_of_a_scenario():
    short, long = ({"train": {"epochs": 90, "min_steps": steps}} for steps in (4000, 12000))
    records = _pair([3, 4, 5, 3, 4, 5], config=short) + _pair([-1, 0, 1, -1, 0, 1], config=long)
    assert judge(_claim(deciding_config={"train.min_steps": 4000}), build_tables(records)).verdict == "reproduced"
    judgement = judge(_claim(deciding_config={"train.min_steps": 12000}), build_tables(records))
    assert judgement.verdict == "not reproduced"
    assert [f.role for f in judgement.findings] == ["deciding", "supporting"]
    # no configuration named: both tables hold the six seeds, so none decides, and the reason says what to name
    unnamed = judge(_claim(), build_tables(records))
    assert unnamed.verdict == "not run yet" and "name its configuration in `deciding_config`" in unnamed.reason
    # ... but where only one holds every declared seed, that one decides
    partial = _pair([3, 4, 5, 3, 4, 5], config=short) + _pair([-1, 0, 1], config=long)
    assert judge(_claim(), build_tables(partial)).verdict == "reproduced"
    # ... and where none does, the declared run is incomplete: untested, not a configuration to name
    unfinished = judge(_claim(), build_tables(_pair([3, 4, 5], config=short) + _pair([-1, 0, 1], config=long)))
    assert unfinished.verdict == "not run yet" and unfinished.reason.endswith("its declared run is not complete")
    # ... unless one holds more of it (the declared run in progress): that one, with its missing seeds named
    ahead = judge(_claim(), build_tables(_pair([3, 4, 5, 3, 4], config=short) + _pair([-1, 0, 1], config=long)))
    assert ahead.verdict == "not run yet"
    assert ahead.reason == "its declared run is not complete (of the 6 declared seeds: a 5, b 5)"


# ------------------------------------------------------------------ the declared run's commands
def test_the_declared_run_is_one_command_per_set_of_hyperparameters_written_out():
    claim = _claim(seeds=8, deciding_config={"train.min_steps": 12000}, compare=[
        {"a": "hoc", "b": "hoc", "statistic": "AC", "effect": 0.1, "a_params": {"lam": 0.5}, "b_params": {"lam": 1.0}},
        {"a": "hoc", "b": "bct", "statistic": "AC", "effect": 0.1, "a_params": {"lam": 0.5}},
        {"a": "cores", "b": "l2", "statistic": "AC", "effect": 0.1, "a_params": {"init": "random"}}])
    start = "benchbackcompat run --preset cpu --scenario ext-class --methods"
    assert declared_runs(claim, "cpu") == [
        f"{start} bct,l2 --seeds 0-7 --set train.min_steps=12000",
        f"{start} cores --seeds 0-7 --set train.min_steps=12000 --set methods.cores.init=random",
        f"{start} hoc --seeds 0-7 --set train.min_steps=12000 --set methods.hoc.lam=0.5",
        f"{start} hoc --seeds 0-7 --set train.min_steps=12000 --set methods.hoc.lam=1.0"]
    assert declared_runs(_claim(deciding="", not_testable="needs faces", blocked_by="data", compare=[])) == []
    # a b row of another declared table: its own command, in that table's scenario and configuration
    two = _claim(compare=[{"a": "hoc", "b": "hoc", "statistic": "AA", "effect": 0.0, "b_deciding": "iam-cl2r-7",
                           "b_deciding_config": {"replacements": []}}], deciding="iam-cl2r-7")
    assert declared_runs(two, "cpu") == [
        "benchbackcompat run --preset cpu --scenario iam-cl2r-7 --methods hoc --seeds 0-5",
        "benchbackcompat run --preset cpu --scenario iam-cl2r-7 --methods hoc --seeds 0-5 --set 'replacements=[]'"]


@pytest.mark.parametrize("value, text", [("random", "random"), ("true", '"true"'), ("12", '"12"'), (0.05, "0.05"),
                                         (True, "true"), (["a", 1], '["a", 1]'), ("a b", "a b")])
def test_a_set_value_reads_back_as_the_value(value, text):
    assert format_override("k", value) == f"k={text}"
    assert parse_override(f"k={text}") == ("k", list(value) if isinstance(value, tuple) else value)


def test_the_page_names_each_claims_declared_run(tmp_path):
    text = _page(tmp_path, _pair([3, 4, 5, 3, 4, 5]), planned=[PlannedScenario("p", "ext-class-tin", "ext-class", "tin")])
    holds = text.split("### holds")[1].split("\n### ")[0]
    assert "Declared run: `benchbackcompat run --preset p --scenario ext-class --methods a,b --seeds 0-5`." in holds
    elsewhere = text.split("### elsewhere")[1].split("\n### ")[0]
    assert "Declared run: `benchbackcompat run --preset p --scenario ext-class-tin --methods a,b --seeds 0-5`." in elsewhere
    assert "Declared run" not in text.split("### faces")[1].split("\n### ")[0]


# ------------------------------------------------------------------ premises
def _iam(method: str, gain: int, seed: int, ac: float) -> dict:
    """An iam-cl2r record of 4 tasks (pretrained models at tasks 1 and 3), 300 queries: self-tests 150, 150 + gain,
    180, 180 + gain hits, so each run of fine-tuning moves the self-test by gain / 3 points; AC set by hand."""
    diagonal = [150, 150 + gain, 180, 180 + gain]
    hits = [[diagonal[k] + (30 if k < t else 0) if k <= t else None for k in range(4)] for t in range(4)]
    record = _sequence(method, hits, seed=seed, scenario="iam-cl2r",
                       config={"kind": "iam-cl2r", "protocol": "template", "eval_split": "open", "metrics": ["top1"]})
    record.update(kind="iam-cl2r", params={"lam": 0.1} if method == "hoc" else {},
                  steps=[{"index": i, "init": init} for i, init in enumerate(("pretrained", "previous", "pretrained", "previous"))])
    for name in ("matrices", "outcomes", "metrics", "chance"):
        record[name] = {"top1": record[name]["cmc@1"]}
    record["metrics"]["top1"]["AC"] = ac
    return record


IAM = {"protocol": {"kind": "iam-cl2r", "retrieval": [["template", "top1"]], "eval_split": "open"},
       "deciding": "iam-cl2r", "premise": "fine-tuning-improves", "premise_on": ["er"],
       "compare": [{"a": "hoc", "b": "er", "statistic": "AC", "effect": 0.4, "a_params": {"lam": 0.1}}]}


def test_the_premise_is_measured_on_the_setting_and_a_method_without_it_is_named():
    def records(hoc: list[int], er: list[int]) -> list[dict]:
        return ([_iam("hoc", hoc[s % 3], s, 0.9) for s in range(6)] + [_iam("er", er[s % 3], s, 0.1) for s in range(6)])

    # gains of 18, 21, 24 queries = 6, 7, 8 points per run: 7 ± 2.5706 sqrt(0.8 / 6) = [6.06, 7.94], above 2
    shown = judge(_claim(**IAM), build_tables(records([18, 21, 24], [18, 21, 24])))
    assert shown.verdict == "reproduced" and shown.findings[0].condition == ", convergence not measured"
    assert ("premise, fine-tuning on the task data improves the models pretrained elsewhere, on the setting: er yes "
            "(+7.00 [+6.06, +7.94] points of self-test per run of fine-tuning over 6 seeds, above 2 needed)"
            ) in shown.findings[0].checked
    # HOC's own gain 0, 1, 2 points ([0.06, 1.94], below 2) with ER's shown: its comparison decides, HOC is named
    lacking = judge(_claim(**IAM), build_tables(records([0, 3, 6], [18, 21, 24])))
    assert lacking.verdict == "reproduced"
    assert lacking.findings[0].condition == ", convergence not measured, premise not shown for hoc (lam=0.1)"
    # the setting's row without it: undecidable whatever the comparison says
    setting = judge(_claim(**IAM), build_tables(records([18, 21, 24], [0, 3, 6])))
    assert setting.findings[0].tests[0].verdict == "reproduced" and setting.verdict == "undecidable"
    assert setting.reason == ("premise of the setting not shown (on er): fine-tuning on the task data improves the "
                              "models pretrained elsewhere")


def test_a_premise_needs_the_rows_it_is_measured_on():
    with pytest.raises(ValueError, match=r"name the rows the premise is measured on \(`premise_on`"):
        _claim(**{**IAM, "premise_on": []})


# ------------------------------------------------------------------ claims files: one-line errors
CLAIM = """
[paper]
title = "A Paper"
venue = "Venue 2026"

[[claim]]
id = "{id}"
statement = "a above b"
where = "Table 1"
seeds = 6
deciding = "ext-class"
{extra}
[claim.protocol]
kind = "ext-class"
retrieval = [["loo", "cmc@1"]]
eval_split = "test"

[[claim.compare]]
a = "a"
b = "b"
statistic = "{statistic}"
{effect} = 2.0
"""


def _file(tmp_path, name: str = "claims.toml", id: str = "c", extra: str = "", statistic: str = "cross",
          effect: str = "effect", more: str = "") -> Path:
    path = tmp_path / name
    path.write_text(CLAIM.format(id=id, extra=extra, statistic=statistic, effect=effect) + more)
    return path


def test_a_claims_file_loads_into_claims(tmp_path):
    file = load_claims(_file(tmp_path))
    (claim,) = file.claim
    assert (file.paper.title, claim.id, claim.compare[0].effect, claim.protocol.classes) == ("A Paper", "c", 2.0, "all")
    assert file.path == str(tmp_path / "claims.toml")


@pytest.mark.parametrize(("fields", "message"), [
    ({"effect": "effekt"}, r"claim c\.compare\.0\.effekt: unknown key, did you mean effect\?"),
    ({"more": '\n[[claim.absent]]\nmethod = "x"\nmargin = 0.1\n'},
     r"claim c: give either \[\[claim.compare\]\] entries or \[\[claim.absent\]\] entries, not both"),
    ({"statistic": "pcom"}, r"claim c\.compare\.0: unknown statistic 'pcom'; did you mean 'p_com'\?"),
    ({"id": "C 1"}, r"claim C 1\.id: String should match pattern"),
])
def test_a_broken_claims_file_is_a_one_line_error_naming_the_problem(tmp_path, fields, message):
    with pytest.raises(BenchError, match=message) as error:
        load_claims(_file(tmp_path, **fields))
    assert "\n" not in str(error.value) and str(error.value).startswith(f"claims file {tmp_path / 'claims.toml'}: ")
    assert "at least 1 item" not in str(error.value)  # the claim is there, only broken


def test_a_claims_file_without_claims_says_so(tmp_path):
    (tmp_path / "empty.toml").write_text('claim = []\n[paper]\ntitle = "A Paper"\nvenue = "Venue"\n')
    with pytest.raises(BenchError, match=r"empty.toml: claim: Tuple should have at least 1 item"):
        load_claims(tmp_path / "empty.toml")


def test_a_claim_without_deciding_table_or_reason_is_an_error(tmp_path):
    path = _file(tmp_path)
    path.write_text(path.read_text().replace('deciding = "ext-class"\n', ""))
    with pytest.raises(BenchError, match=r"claim c: name the table that decides it \(`deciding`\), or say why it is "
                                         r"not testable \(`not_testable`\)"):
        load_claims(path)
    path.write_text(path.read_text().replace('seeds = 6\n', 'seeds = 6\nnot_testable = "needs faces"\nblocked_by = "data"\n'))
    assert load_claims(path).claim[0].not_testable == "needs faces"


def test_unreadable_claims_files_and_repeated_ids_are_one_line_errors(tmp_path):
    with pytest.raises(BenchError, match=r"claims file .*missing.toml: not found; pass the path of a TOML claims file"):
        load_claims(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("[paper\n")
    with pytest.raises(BenchError, match=r"bad.toml: not valid TOML \(") as error:
        load_claims(tmp_path / "bad.toml")
    assert "\n" not in str(error.value)
    first, second = _file(tmp_path, "one.toml"), _file(tmp_path, "two.toml")
    with pytest.raises(BenchError, match=r"two.toml: claim id 'c' is also in .*one.toml; give each claim its own id"):
        load_all([first, second], installed=False)
    assert [f.claim[0].id for f in load_all([first, _file(tmp_path, "three.toml", id="d")], installed=False)] == ["c", "d"]


def test_leaderboard_with_a_broken_claims_file_exits_with_one_line(tmp_path, capsys):
    broken = _file(tmp_path, effect="effekt")
    code = main(["leaderboard", "--results", str(tmp_path / "results"), "--claims", str(broken)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "Traceback" not in err and len(err.splitlines()) == 1
    assert err.startswith(f"error: claims file {broken}: ") and "compare.0.effekt: unknown key, did you mean effect?" in err


# ------------------------------------------------------------------ the page
PAGE = """
[paper]
title = "A Paper: its subtitle"
venue = "Venue 2026"

[[claim]]
id = "holds"
statement = "a above b"
where = "Table 1"
numbers = [["a", 0.6], ["b", 0.5]]
seeds = 6
deciding = "ext-class"
implementation = ["tests/test_claims.py::test_sign_flip_p_by_hand"]
protocol = {{ kind = "ext-class", retrieval = [["loo", "cmc@1"]], eval_split = "test" }}
compare = [{{ a = "a", b = "b", statistic = "cross", effect = 2.0 }}]

[[claim]]
id = "elsewhere"
statement = "a above b on tin"
where = "Table 2"
seeds = 6
deciding = "ext-class-tin"
protocol = {{ kind = "ext-class", retrieval = [["loo", "cmc@1"]], eval_split = "test" }}
compare = [{{ a = "a", b = "b", statistic = "cross", effect = 2.0 }}]

[[claim]]
id = "faces"
statement = "a above b on faces"
where = "Table 3"
seeds = 6
not_testable = "needs a face data set"
blocked_by = "data"
protocol = {{ kind = "ext-class", retrieval = [["loo", "cmc@1"]], eval_split = "test" }}

[[claim]]
id = "seven"
statement = "a above b, seven seeds"
where = "Table 1"
tally = "variant"
variant = "not in the paper's tables"
seeds = 7
deciding = "ext-class"
protocol = {{ kind = "ext-class", retrieval = [["loo", "cmc@1"]], eval_split = "test" }}
compare = [{{ a = "a", b = "b", statistic = "cross", effect = 2.0 }}]
"""


def _page(tmp_path, records: list[dict], **options) -> str:
    (tmp_path / "page.toml").write_text(PAGE.format())
    return claims_markdown([load_claims(tmp_path / "page.toml")], build_tables(records), "> header", **options)


def claims_markdown(*args, **options) -> str:
    """Every claims page (``claims.md`` first, then each paper's), one after the other."""
    return "\n".join(claims_pages(*args, **options).values())


def test_the_page_tallies_one_verdict_per_claim_and_gives_one_summary_line_each(tmp_path):
    (tmp_path / "page.toml").write_text(PAGE.format())
    pages = claims_pages([load_claims(tmp_path / "page.toml")], build_tables(_pair([3, 4, 5, 3, 4, 5])), "> header")
    assert list(pages) == ["claims.md", "claims/page.md"]
    tally = pages["claims.md"].split("## Tally")[1].split("\n## ")[0]
    # paper claims: holds reproduced, elsewhere not run yet, faces not testable (data); the variant: six of its seven
    # seeds, so not run yet; one category a line
    for row in ("| reproduced | 1 | 0 |", "| not reproduced | 0 | 0 |", "| not run yet | 1 | 1 |",
                "| not testable here | 1 | 0 |", "| not testable here: data that cannot be obtained offline | 1 | 0 |",
                "| not testable here: work that needs a GPU | 0 | 0 |", "| all | 3 | 1 |"):
        assert row in tally, row
    digest = pages["claims.md"].split("## Digest")[1].split("\n## ")[0]
    assert "- hold: 1: holds\n" in digest and "- fail (not reproduced): 0\n" in digest
    assert "- cannot be run: 1 not testable here (1 data); 1 not run yet" in digest
    summary = pages["claims/page.md"].split("## Summary")[1].split("\n#")[0]
    lines = [line for line in summary.splitlines() if line.startswith("- ")]
    assert len(lines) == 4
    assert lines[0] == ("- **holds** (A Paper): a above b: **reproduced, convergence not measured** on ext-class "
                        "(decided by a − b (cross): +4.00 \\[3.06, 4.94\\] against a declared effect of 2; exact p = "
                        "0.0312 against a mean difference of 0 (6 seeds))")
    assert lines[1].endswith("**not run yet**; its deciding table (ext-class-tin) is not in these results")
    assert lines[2].endswith("**not testable here**; needs a face data set")
    assert lines[3].endswith("a above b, seven seeds: **not run yet**; its declared run is not complete (of the 7 "
                             "declared seeds: a 6, b 6)")
    text = pages["claims/page.md"]
    assert "### faces: a above b on faces" in text and "**not testable here**: needs a face data set" in text
    assert "`tests/test_claims.py`: `test_sign_flip_p_by_hand`" in text.split("## Implementation tests")[1]
    assert "Source: Table 1: a 0.6, b 0.5." in text
    assert "[A Paper: its subtitle (Venue 2026)](claims/page.md)" in pages["claims.md"]


def test_the_papers_page_links_the_study_section_its_claims_file_names(tmp_path):
    section = "../../studies/study.md#the-paper"
    (tmp_path / "page.toml").write_text(PAGE.format().replace('venue = "Venue 2026"\n',
                                                              f'venue = "Venue 2026"\nstudy_section = "{section}"\n'))
    pages = claims_pages([load_claims(tmp_path / "page.toml")], build_tables(_pair([3, 4, 5, 3, 4, 5])), "> header")
    assert ("[All papers: digest and tally](../claims.md) · claims file: `" + str(tmp_path / "page.toml") + "` · study: "
            "[the report's section on this paper](../../studies/study.md#the-paper)") in pages["claims/page.md"].splitlines()
    assert "study:" not in _page(tmp_path, _pair([3, 4, 5, 3, 4, 5]))  # no study_section, no link


@pytest.mark.parametrize("section", ["https://example.com/study.md#a", "/studies/study.md#a", "../study.md",
                                     "../study.md#The-Paper", "../study.md#a b", "../study.txt#a", "../s(x).md#a"])
def test_a_study_section_that_is_not_a_relative_link_to_a_heading_is_a_one_line_error(tmp_path, section):
    path = tmp_path / "page.toml"
    path.write_text(PAGE.format().replace('venue = "Venue 2026"\n', f'venue = "Venue 2026"\nstudy_section = "{section}"\n'))
    with pytest.raises(BenchError, match=r"paper: study_section .* is not a relative link to a Markdown heading") as error:
        load_claims(path)
    assert "\n" not in str(error.value)


def test_report_names_planned_scenarios_without_records(tmp_path):
    loo = (("protocol", "loo"), ("eval_split", "test"), ("metrics", ["cmc@1", "map"]))
    planned = [PlannedScenario("p", "ext-class", "ext-class", "d"),  # it has a table
               PlannedScenario("p", "ext-class-tin", "ext-class", "tin", loo),
               PlannedScenario("p", "ext-class-open", "ext-class", "d", (("eval_split", "open"), ("metrics", ["cmc@1"]))),
               PlannedScenario("p", "zoo", "model-zoo", "d")]
    claim = _claim()
    assert [p.could_test(claim) for p in planned] == [True, True, False, False]
    text = _page(tmp_path, _pair([3, 4, 5, 3, 4, 5]), planned=planned)
    section = text.split("## Not tested")[1].split("## Implementation tests")[0]
    rows = [line for line in section.splitlines() if line.startswith("| p ·")]
    # holds, elsewhere and seven test an ext-class table on the test split (faces is not testable); elsewhere decides
    assert rows == ["| p · ext-class-tin | tin | 3 (1 deciding) | `benchbackcompat run --preset p --scenario ext-class-tin` |"]
    assert "## Not tested" not in _page(tmp_path, _pair([3, 4, 5, 3, 4, 5]))


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


# ------------------------------------------------------------------ convergence as a condition
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
    # a verdict names what it is conditional on: nothing where training converged, "not converged" where it did not
    converged = judge(_claim(), build_tables(_pair([3, 4, 5, 3, 4, 5])), calibrations)
    assert converged.verdict == "reproduced" and converged.deciding.condition == ""
    assert converged.deciding.checked[-1].startswith("training converged: yes (90 -> 135 epochs")
    absent = judge(_claim(**ABSENT_AC), build_tables([_ac("independent", s, 0.0) for s in range(6)]), calibrations)
    assert absent.verdict == "reproduced" and absent.deciding.condition == ", training not converged"
    file = load_claims(_file(tmp_path))
    text = claims_markdown([file], build_tables(_pair([3, 4, 5, 3, 4, 5])), "> header", calibrations)
    assert "**reproduced** on ext-class" in text and "training converged: yes (90 -> 135 epochs" in text
    unmeasured = claims_markdown([file], build_tables(_pair([3, 4, 5, 3, 4, 5])), "> header")
    assert "**reproduced, convergence not measured** on ext-class" in unmeasured
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


def test_the_checks_name_compared_rows_whose_self_tests_pass_95_percent():
    # AC rows of three models; independent's last model scores 290 of 300 queries (96.7%) at seeds 0-5, the other
    # self-tests 150 of 300 (50%): 6 of its 18 self-tests are above 95%
    def saturated(seed: int) -> dict:
        record = _sequence("independent", [[150], [150, 150], [150, 150, 290]], seed=seed)
        record["metrics"]["cmc@1"]["AC"] = 0.0
        return record
    finding = judge(_claim(**ABSENT_AC), build_tables([saturated(s) for s in range(6)])).findings[0]
    assert "self-tests at most 95%: no, independent 6 of 18 (up to 96.7)" in finding.checked
    finding = judge(_claim(**ABSENT_AC), build_tables([_ac("independent", s, 0.0) for s in range(6)])).findings[0]
    assert "self-tests at most 95%: yes" in finding.checked


def test_the_terminal_summary_is_plain_text():
    from benchbackcompat.cli.publish import claims_summary
    from benchbackcompat.report.claims.declared import ClaimsFile

    file = ClaimsFile.model_validate({"paper": {"title": "P", "venue": "V"}, "claim": [_claim(id="cross1-c").model_dump()]})
    records = _pair([3.0, 4.0, 5.0, 3.0, 4.0, 5.0])
    plain, marked = claims_summary([file], records, [], plain=True), claims_summary([file], records, [])
    assert "**reproduced" in marked and "**" not in plain and "\\" not in plain
    assert "- cross1-c (P): a above b: reproduced, convergence not measured on ext-class" in plain


# ------------------------------------------------------------------ strict claims files
@pytest.mark.parametrize(("edit", "message"), [
    (("effect = 2.0", 'effect = "24.0"'), r"claim c\.compare\.0\.effect: Input should be a valid number, got str '24\.0'"),
    (("effect = 2.0", "effect = nan"), r"claim c\.compare\.0\.effect: not a finite number; a claims file holds finite numbers only"),
    (("effect = 2.0", "effect = true"), r"claim c\.compare\.0\.effect: Input should be a valid number, got bool"),
    (('kind = "ext-class"', 'kind = "ext-clas"'), r"claim c\.protocol: unknown scenario kind 'ext-clas'; did you mean 'ext-class'\?"),
    (("seeds = 6", "seeds = 100000000"), r"claim c\.seeds: Input should be less than or equal to 16"),
    (("seeds = 6", 'seeds = "6"'), r"claim c\.seeds: Input should be a valid integer, got str '6'"),
])
def test_numbers_and_kinds_are_strict(tmp_path, edit, message):
    path = _file(tmp_path)
    path.write_text(path.read_text().replace(*edit))
    with pytest.raises(BenchError, match=message) as error:
        load_claims(path)
    assert "\n" not in str(error.value)


def test_an_absence_margin_of_inf_and_deep_nesting_are_one_line_errors(tmp_path):
    path = _file(tmp_path, statistic="AC", more="")
    path.write_text(path.read_text().replace('[[claim.compare]]\na = "a"\nb = "b"\nstatistic = "AC"\neffect = 2.0\n',
                                             '[[claim.absent]]\nmethod = "a"\nmargin = inf\n'))
    with pytest.raises(BenchError, match=r"claim c\.absent\.0\.margin: not a finite number"):
        load_claims(path)
    path.write_text(path.read_text().replace("margin = inf", "margin = 0.1\nparams = { x = " + "[" * 3000 + "]" * 3000 + " }"))
    with pytest.raises(BenchError, match=r"nested more than 8 deep") as error:
        load_claims(path)
    assert "\n" not in str(error.value)


def test_names_are_checked_against_the_installed_plugins_and_presets(tmp_path):
    path = _file(tmp_path)
    text = path.read_text().replace('a = "a"\nb = "b"', 'a = "hocc"\nb = "bct"').replace('statistic = "cross"', 'statistic = "AC"')
    path.write_text(text)
    with pytest.raises(BenchError, match=r"claim c: compare\.0\.a: unknown method 'hocc'; did you mean 'hoc'\?"):
        load_all([path])
    path.write_text(text.replace('"hocc"', '"hoc"').replace('deciding = "ext-class"', 'deciding = "ext-clas"'))
    with pytest.raises(BenchError, match=r"claim c: deciding: unknown scenario \(presets: .*\) 'ext-clas'; did you mean"):
        load_all([path])
    path.write_text(text.replace('"hocc"', '"hoc"') + 'a_params = { lamm = 0.1 }\n')
    with pytest.raises(BenchError, match=r"compare\.0\.a: unknown hyperparameter of hoc 'lamm'; did you mean 'lam'\?"):
        load_all([path])
    path.write_text(text.replace('"hocc"', '"hoc"') + 'a_params = { lam = "0.1" }\n')
    with pytest.raises(BenchError, match=r"compare\.0\.a: hoc lam: Input should be a valid number"):
        load_all([path])


def test_claims_text_is_inert_on_every_page(tmp_path):
    hostile = "<script>x</script> `code` | a\x1b[2J"
    path = _file(tmp_path)
    path.write_text(path.read_text().replace('statement = "a above b"', f'statement = {json.dumps(hostile)}')
                    .replace('title = "A Paper"', 'title = "A `Paper` <b>"'))
    pages = claims_pages([load_claims(path)], build_tables(_pair([3, 4, 5, 3, 4, 5])), "> header")
    for text in pages.values():
        assert "<script>" not in text and "<b>" not in text and "\x1b" not in text and "`code`" not in text
    assert "&lt;script>x&lt;/script> \\`code\\` \\| a" in pages["claims/claims.md"]
