"""Grids, the validation split and the selection rules (hand-computed cases, brute-force counts)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from benchbackcompat.config import DataConfig, ValidationSplit
from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.errors import BenchError
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.execution.presets import load_preset, resolve_run
from benchbackcompat.record import parse_record
from benchbackcompat.report import leaderboard_tables
from benchbackcompat.execution.plan import make_plan
from benchbackcompat.scenarios.data import per_class_sample, validation_sets
from benchbackcompat.execution.selection import choose, grid_points, parse_grid_option, validation_scores


def test_grid_option_values_are_read_as_toml():
    assert parse_grid_option("methods.l2.weight=0.1,1,10") == ("l2", "weight", [0.1, 1, 10])
    assert parse_grid_option("methods.lsp.center=true,false") == ("lsp", "center", [True, False])
    assert parse_grid_option("methods.bct.synthesis=mean, none") == ("bct", "synthesis", ["mean", "none"])


@pytest.mark.parametrize("bad", ["l2.weight=1,2", "methods.l2=1,2", "methods.l2.weight", "methods.l2.weight=", "train.epochs=1,2"])
def test_bad_grid_options_fail_with_one_line(bad):
    with pytest.raises(BenchError, match="expected methods.NAME.KEY=V1,V2") as error:
        parse_grid_option(bad)
    assert "\n" not in str(error.value)


def test_grid_points_are_the_cartesian_product_in_declared_order():
    points = grid_points({"lam": [0.1, 0.5], "rho": [2, 1], "negatives": ["official"]})
    assert points == [
        {"lam": 0.1, "rho": 2, "negatives": "official"}, {"lam": 0.1, "rho": 1, "negatives": "official"},
        {"lam": 0.5, "rho": 2, "negatives": "official"}, {"lam": 0.5, "rho": 1, "negatives": "official"},
    ]
    with pytest.raises(BenchError, match="non-empty list"):
        grid_points({"lam": []})


def test_hbct_rule_takes_the_best_p_com_that_does_not_hurt_the_new_model():
    scores = [{"p_com": 0.9, "p_up": -0.05}, {"p_com": 0.6, "p_up": 0.01}, {"p_com": 0.7, "p_up": 0.0}]
    assert choose("hbct", scores).index == 2  # 0.9 hurts the new model (P_up < 0); of the others 0.7 > 0.6
    assert choose("hbct", scores, tolerance=0.05).index == 0  # within tolerance now
    hurting = [{"p_com": 0.9, "p_up": -0.2}, {"p_com": 0.1, "p_up": -0.1}]
    chosen = choose("hbct", hurting)
    assert chosen.index == 1 and "least harm" in chosen.note
    assert choose("hbct", [{"p_com": None, "p_up": None}, {"p_com": float("nan"), "p_up": 0.1}]).index == 1
    assert choose("hbct", [{"p_com": None, "p_up": None}]) is None


def test_sequence_rule_is_ac_then_aa_and_ties_go_to_the_earlier_point():
    scores = [{"AC": 0.5, "AA": 40.0}, {"AC": 0.8, "AA": 30.0}, {"AC": 0.8, "AA": 35.0}, {"AC": 0.8, "AA": 35.0}]
    assert choose("ac-then-aa", scores).index == 2


def test_validation_scores_average_seeds_and_drop_points_with_a_failed_seed():
    cell = {"key": "k", "label": "s/m/seed0", "scenario": "s", "kind": "ext-class", "method": "m", "seed": 0}
    finished = [parse_record({**cell, "status": "finished", "metrics": {"cmc@1": {"p_com": p, "p_up": u}}})
                for p, u in ((0.2, -0.1), (0.4, 0.1))]
    assert validation_scores(finished, "hbct", "cmc@1") == pytest.approx({"p_com": 0.3, "p_up": 0.0})
    diverged = [finished[0], parse_record({**cell, "status": "diverged", "reason": "loss is NaN"})]
    assert validation_scores(diverged, "hbct", "cmc@1") == {"p_com": None, "p_up": None}


def test_validation_split_takes_a_seeded_fraction_of_every_class():
    labels = torch.tensor([0] * 10 + [1] * 20 + [2] * 5 + [3] * 2).flip(0)
    held = per_class_sample(labels, 0.2, seed=3)
    counts = {c: int((labels[held] == c).sum()) for c in range(4)}
    assert counts == {0: 2, 1: 4, 2: 1, 3: 1}  # round(0.2 n), at least 1, never the whole class
    assert len(set(held.tolist())) == len(held) and torch.equal(held, per_class_sample(labels, 0.2, seed=3))
    assert not torch.equal(held, per_class_sample(labels, 0.2, seed=4))


def test_validation_sets_partition_the_training_images():
    labels = torch.arange(6).repeat_interleave(10)
    images = torch.arange(60, dtype=torch.uint8).view(60, 1, 1, 1).expand(60, 1, 2, 2).clone()
    train = ImageArrays(images, labels)
    rest, query, gallery = validation_sets(train, ValidationSplit(fraction=0.4, seed=0), two_sets=True)
    ids = [set(part.images[:, 0, 0, 0].tolist()) for part in (rest, query, gallery)]
    assert sum(map(len, ids)) == 60 and set.union(*ids) == set(range(60))
    for part, per_class in ((rest, 6), (query, 2), (gallery, 2)):
        assert torch.bincount(part.labels, minlength=6).tolist() == [per_class] * 6
    rest, query, gallery = validation_sets(train, ValidationSplit(fraction=0.4, seed=0), two_sets=False)
    assert gallery is None and len(query) == 24 and len(rest) == 36


def test_without_a_split_the_data_configuration_dumps_as_before():
    assert "validation" not in DataConfig().model_dump(mode="json")  # so no existing cell key changes
    assert DataConfig(validation={"fraction": 0.1}).model_dump(mode="json")["validation"] == {"fraction": 0.1, "seed": 0}


def test_grids_from_the_preset_the_command_line_and_the_method():
    run = resolve_run(preset="paper", scenarios=["ext-class"], methods=["l2", "hoc-euclidean", "hbct"],
                      grids=["methods.l2.weight=0.5,2"], assignments=["selection.tolerance=0.02"])
    assert run.grids["l2"] == {"weight": [0.5, 2]}
    assert run.grids["hoc-euclidean"] == {"lam": [0.1, 0.3, 0.5, 0.7, 0.9], "rho": [2.0, 1.0]}
    assert "hbct" not in run.grids and run.selection.tolerance == 0.02 and run.selection.validation.fraction == 0.1
    quick = resolve_run(preset="quick", scenarios=["ext-class"], methods=["hot-refresh"], grids=["methods.hot-refresh"])
    plan = make_plan(quick, PluginHost())
    assert [c.params["weight"] for c in plan.cells] == [0.2, 0.2, 0.4, 0.4, 0.6, 0.6, 0.8, 0.8, 1.0, 1.0]
    with pytest.raises(BenchError, match="not among --methods"):
        resolve_run(preset="quick", scenarios=["ext-class"], methods=["l2"], grids=["methods.bct.weight=1,2"])
    with pytest.raises(BenchError, match="declares no default grid"):
        make_plan(resolve_run(preset="quick", scenarios=["ext-class"], methods=["hbct"], grids=["methods.hbct"]), PluginHost())


def test_the_paper_preset_grids_are_hbct_s_ten_settings_and_the_methods_defaults():
    host = PluginHost()
    for name, grid in load_preset("paper")["grids"].items():
        assert len(grid_points(grid)) == 10, name
        assert grid == host.create_method(name, {}).Params.grid, name


def test_every_grid_point_is_its_own_cell_on_the_validation_split():
    run = resolve_run(scenarios=["ext-class", "multi-step"], methods=["independent", "l2"], seeds=[0, 1],
                      grids=["methods.l2.weight=0.1,1,10"])
    plan = make_plan(run, PluginHost())
    selection = [c for c in plan.cells if c.role == "selection"]
    assert len(selection) == 2 * 3 * 2 and len(plan.cells) == len(selection) + 2 * 2  # independent: 2 scenarios x 2 seeds
    for cell in plan.cells:
        cell.data_fingerprint = "the same for all"  # keys then differ by configuration and parameters alone
    assert len({c.key for c in plan.cells}) == len(plan.cells)
    assert all(c.scenario.config.data.validation == run.selection.validation for c in selection)
    assert {s.identity["rule"] for s in plan.searches} == {"hbct", "ac-then-aa"}
    assert plan.searches[0].identity["metric"] == "cmc@1"


def test_a_bad_grid_value_fails_before_training():
    run = resolve_run(scenarios=["ext-class"], methods=["l2"], grids=["methods.l2.weight=1,-1"])
    with pytest.raises(BenchError, match="weight"):
        make_plan(run, PluginHost())
    with pytest.raises(BenchError, match="unknown key"):
        make_plan(resolve_run(scenarios=["ext-class"], methods=["l2"], grids=["methods.l2.wieght=1,2"]), PluginHost())



def test_leaderboard_shows_the_selected_setting_apart_from_the_same_setting_run_directly():
    records = json.loads((Path(__file__).parent / "fixtures" / "leaderboard_records.json").read_text())
    plain = [r for r in records if r["scenario"] == "ext-class" and r["method"] == "l2"]
    points = [{"params": {"weight": w}, "validation": {"p_com": c, "p_up": u}, "status": ["finished"], "seconds": 10.0}
              for w, c, u in ((0.1, 0.25, 0.0), (1.0, 0.5, -0.01))]
    selection = {"grid": {"weight": [0.1, 1.0]}, "rule": "hbct", "metric": "cmc@1", "tolerance": 0.0,
                 "validation": {"fraction": 0.2, "seed": 0}, "seeds": [0, 1], "selected": {"weight": 0.1},
                 "note": "highest P_com among the 1 of 2 settings", "grid_size": 2, "points": points, "grid_seconds": 20.0}
    chosen = [{**r, "key": r["key"] + "s", "selection": selection} for r in plain]
    validation = [{**plain[0], "key": "v", "role": "selection"}]
    text = leaderboard_tables(records + chosen + validation, grids=True)
    rows = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| l2")]
    assert sorted(set(rows)) == ["l2", "l2 (selected weight=0.1)"]  # two rows (in each view), each with its own 2 seeds
    assert "**weight=0.1** of 2 settings, rule `hbct`" in text and "validation p\\_com 0.250, p\\_up 0.000" in text
    assert "grid cost 20 s" in text
    grid = [line for line in text.splitlines() if line.startswith("| 0.1") or line.startswith("| 1.0")]
    assert [line.rstrip(" |").endswith("←") for line in grid] == [True, False]
    terminal = leaderboard_tables(records + chosen + validation, grids=True, plain=True)  # the same, in plain text
    assert "weight=0.1 of 2 settings, rule hbct" in terminal and "validation p_com 0.250, p_up 0.000" in terminal
    assert "\\" not in terminal and "**" not in terminal and "[^" not in terminal
