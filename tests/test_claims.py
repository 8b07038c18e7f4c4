"""The claims report on hand-made records: verdicts follow the paired interval of the difference."""
from __future__ import annotations

import json

import numpy as np
import pytest

from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import outcomes
from benchbackcompat.report.calibration import convergence, read_calibrations
from benchbackcompat.report.aggregate import build_tables
from benchbackcompat.report.claims import (HOC, PlannedScenario, NOT_REPRODUCED, REPRODUCED, UNDECIDABLE, CLAIMS, Pick, claims_markdown,
                                           compare)
from benchbackcompat.report.publish import planned_scenarios
from test_statistics import _single


def _sequence(method: str, hits: list[list[int | None]], n: int = 300, seed: int = 0) -> dict:
    """A multi-step record whose C[t][k] is hits[t][k] of n queries (the first queries hit)."""
    T = len(hits)

    def encoded(k: int) -> dict:
        values = np.zeros(n, dtype=bool)
        values[:k] = True
        return outcomes.encode(values)

    C = [[100.0 * hits[t][k] / n if k <= t else None for k in range(T)] for t in range(T)]
    params = {"temperature": 1.0} if method in ("psp", "lsp") else {}  # the cpu preset's setting, which the claims name
    return {"status": "finished", "key": f"{method}{seed}", "label": f"multi-step/{method}/seed{seed}",
            "scenario": "multi-step", "kind": "multi-step",
            "dataset": "d", "preset": "p", "method": method, "params": params, "seed": seed,
            "config": {"metrics": ["cmc@1"]}, "metrics": {"cmc@1": {"AA": 0.0, "AC": 0.0, "ACA": 0.0}},
            "matrices": {"cmc@1": C}, "chance": {"cmc@1": 1.0},
            "outcomes": {"cmc@1": {"C": [[encoded(hits[t][k]) if k <= t else None for k in range(T)]
                                         for t in range(T)]}}}


def _verdicts(records: list[dict], statement: str) -> list[str]:
    claim = next(c for c in CLAIMS if c.statement == statement)
    return [claim.test(t).verdict for t in build_tables(records) if t.kind in claim.kinds]


def test_ac_claims_from_brute_force_matrices():
    # PSP: every later model beats the earlier self-test (AC 1); independent: none does (AC 0)
    psp = _sequence("psp", [[150], [180, 200], [190, 210, 240]])
    independent = _sequence("independent", [[150], [10, 200], [5, 8, 240]])
    for record in (psp, independent):  # AC as the paper's formula, by hand
        record["metrics"]["cmc@1"]["AC"] = 1.0 if record is psp else 0.0
    assert _verdicts([psp, independent], "PSP compatible on multi-step where independent encoders are not") == [REPRODUCED]
    # how far from compatible, by hand in points of 300 queries: psp (30 + 40 + 10) / 3 / 3, independent
    # (-140 - 145 - 192) / 3 / 3
    claim = next(c for c in CLAIMS if c.statement == "PSP compatible on multi-step where independent encoders are not")
    margins = claim.test(build_tables([psp, independent])[0]).checked[-1]
    assert margins.endswith(f"psp (temperature=1.0) {80 / 9:+.1f}, independent {-477 / 9:+.1f}"), margins
    # self-tests by hand: psp's 150, 200, 240 of 300 are 50, 66.7 and 80%; a gallery model at 290 of 300 (96.7%)
    assert claim.test(build_tables([psp, independent])[0]).checked[-2] == "self-tests at most 95%: yes"
    saturated = _sequence("psp", [[290], [290, 200], [290, 210, 299]])
    assert claim.test(build_tables([saturated, independent])[0]).checked[-2] == (
        "self-tests at most 95%: no, psp (temperature=1.0) 2 of 3 (up to 99.7)")
    # LSP no more compatible than independent: the difference [0, 0] lies at zero -> not reproduced
    lsp = _sequence("lsp", [[150], [10, 200], [5, 8, 240]])
    assert _verdicts([lsp, independent], "LSP compatible on multi-step where independent encoders are not") == [NOT_REPRODUCED]
    # a cross-test one query above the self-test on 300 queries: AC 1 on the point values, but the interval
    # of AC spans 0..1, so the claim is undecidable here
    close = _sequence("psp", [[150], [151, 200], [151, 201, 240]])
    assert _verdicts([close, independent], "PSP compatible on multi-step where independent encoders are not") == [UNDECIDABLE]


def test_hbct_claim_needs_a_decidable_update():
    n = 400
    decided = [_single("hbct", 0, n, 200, 300, 290, 200, 300), _single("l2", 0, n, 200, 300, 240, 200, 300),
               _single("hbct-no-entail", 0, n, 200, 300, 288, 200, 300)]
    assert _verdicts(decided, "HBCT's P_com above the best Euclidean method's") == [REPRODUCED]  # 0.9 vs 0.4
    assert _verdicts(decided, "HBCT's P_com above HBCT without the entailment loss") == [UNDECIDABLE]  # 0.9 vs 0.88
    small = [_single("hbct", 0, n, 200, 210, 209, 200, 208), _single("l2", 0, n, 200, 210, 201, 200, 208)]
    claim = next(c for c in CLAIMS if c.statement == "HBCT's P_com above the best Euclidean method's")
    finding = claim.test(build_tables(small)[0])
    assert finding.verdict == UNDECIDABLE and any("update decidable: no" in c for c in finding.checked)


def test_report_lists_untested_claims():
    text = claims_markdown(build_tables([_single("hbct", 0, 100, 50, 80, 70, 50, 80)]), "> header")
    assert text.count("\n| ") == len(CLAIMS) + 1  # header row + one line per claim (one table or none)
    assert "no stored table of iam-cl2r" in text


def test_report_names_planned_scenarios_without_records():
    planned = [PlannedScenario("p", "multi-step", "multi-step", "d"), PlannedScenario("p", "ext-class-tin", "ext-class", "tin"),
               PlannedScenario("p", "zoo", "model-zoo", "d")]
    text = claims_markdown(build_tables([_sequence("psp", [[150], [180, 200]])]), "> header", planned=planned)
    section = text.split("## Not tested")[1].split("## Bugs excluded")[0]
    rows = [line for line in section.splitlines() if line.startswith("| p ·")]
    # multi-step has a table and the zoo tests no claim; ext-class tests BCT's one-update claim and HBCT's two
    assert rows == ["| p · ext-class-tin | tin | CoReS / BCT (1), HBCT (2) | "
                    "`benchbackcompat run --preset p --scenario ext-class-tin` |"]
    assert "## Not tested" not in claims_markdown(build_tables([_sequence("psp", [[150], [180, 200]])]), "> header")


def test_planned_scenarios_come_from_the_named_preset():
    planned = planned_scenarios({"cpu", "no-such-preset"})
    assert PlannedScenario("cpu", "ext-class-tin", "ext-class", "tinyimagenet") in planned
    assert PlannedScenario("cpu", "multi-step-seen", "multi-step", "embedded") in planned
    assert {p.preset for p in planned} == {"cpu"}


def test_a_broken_preset_file_leaves_the_untested_list_out_with_a_warning(tmp_path, monkeypatch, caplog):
    (tmp_path / "mine.toml").write_text("[scenarios\n")
    monkeypatch.setenv("BENCHBACKCOMPAT_PRESETS", str(tmp_path))
    assert planned_scenarios({"mine"}) == []
    assert "untested scenarios of 'mine' not listed" in caplog.text


def test_a_second_table_of_the_kind_without_the_claims_methods_adds_no_line():
    psp = _sequence("psp", [[150], [180, 200], [190, 210, 240]])
    independent = _sequence("independent", [[150], [10, 200], [5, 8, 240]])
    seen = {**_sequence("psp", [[150], [180, 200], [190, 210, 240]]), "scenario": "multi-step-seen", "key": "seen"}
    text = claims_markdown(build_tables([psp, independent, seen]), "> header")
    psp_lines = [line for line in text.splitlines() if line.startswith("| PSP/LSP | PSP compatible on multi-step where independent encoders are not |")]
    assert len(psp_lines) == 1 and "· multi-step |" in psp_lines[0]  # multi-step-seen lacks independent
    cores_lines = [line for line in text.splitlines() if line.startswith("| CoReS | CoReS more compatible than ift")]
    assert len(cores_lines) == 2 and all("not run" in line for line in cores_lines)  # neither table has cores: both say so


def test_bct_one_update_claim_is_the_cross_test_above_the_old_self_test():
    # BCT's empirical compatibility criterion: cross-test above the old self-test (P_com > 0), by hand on 400
    # queries: 240 of 400 against 200 is P_com 0.4; 201 against 200 is P_com 0.01 with an interval around 0
    n, statement = 400, "BCT compatible after one update but not after many"
    assert _verdicts([_single("bct", 0, n, 200, 300, 240, 200, 300)], statement) == [REPRODUCED]
    assert _verdicts([_single("bct", 0, n, 200, 300, 201, 200, 300)], statement) == [UNDECIDABLE]
    assert _verdicts([_single("bct", 0, n, 200, 300, 150, 200, 300)], statement) == [NOT_REPRODUCED]


def test_hoc_claims_take_the_published_lambda_when_an_ablation_shares_the_table():
    # IAM-CL2R: HOC's lambda = 1 ablation is more compatible here (AC 1 by hand) than HOC at the published
    # lambda = 0.1 (AC 1/3), so it ranks first; the claims must still read the lambda = 0.1 row
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
    finding = compare(table, Pick("hoc"), HOC, "AC")
    assert finding.verdict == UNDECIDABLE
    assert finding.checked == ["records: 2 settings of hoc here (hoc (lam=1.0), hoc (lam=0.1)); the claim names none"]


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
    assert "## Bugs excluded" in text and f"`{path}`: `{test}`" in text


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
    claims_per_table = 3  # BCT's one update and HBCT's two claims test an ext-class table
    assert text.count("training converged: yes (") == claims_per_table
    assert text.count("training converged: not measured at this table's length") == claims_per_table
