"""A larger test set evaluates the models already trained: training keys depend on the training images alone."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch

from benchbackcompat.cli import main
from benchbackcompat.scenarios.data import load_scenario_data
from benchbackcompat.testing.scenarios import tiny_run_args, tiny_scenario

pytestmark = pytest.mark.slow

ARGS = ["--scenario", "ext-class", "--methods", "l2", "-q", *tiny_run_args(1)]


def run(out: Path, *extra: str) -> dict:
    """Run the tiny ext-class cell of l2 into ``out``; its record (the last one written)."""
    assert main(["run", "--out", str(out), *ARGS, *extra]) == 0
    newest = max(out.glob("cells/*/record.json.gz"), key=lambda p: p.stat().st_mtime_ns)
    return json.loads(gzip.decompress(newest.read_bytes()))


def trained_files(out: Path) -> dict[str, int]:
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in [*out.glob("cells/*/step-*.pt"), *out.glob("models/*.pt")]}


def test_a_larger_test_set_loads_every_model_and_scores_as_a_fresh_run(tmp_path):
    store, fresh = tmp_path / "store", tmp_path / "fresh"
    small = run(store)
    trained = trained_files(store)
    assert any("models/" in name for name in trained) and any("step-" in name for name in trained)
    entry = store / "cells" / small["key"] / "cell.json"  # as noted by an older version, whose training keys differ
    entry.write_text(json.dumps({k: v for k, v in json.loads(entry.read_text()).items() if k != "training_key"}))
    assert run(store) == small  # finished: skipped, and its training key noted again
    assert "training_key" in json.loads(entry.read_text())

    large = run(store, "--set", "data.test_per_class=20")
    assert large["key"] != small["key"]
    assert large["outcomes"]["cmc@1"]["C"][0][0]["n"] == 6 * 20 and small["outcomes"]["cmc@1"]["C"][0][0]["n"] == 6 * 12
    assert trained_files(store) == trained  # nothing trained again: the old model, l2's step and the reference loaded

    alone = run(fresh, "--set", "data.test_per_class=20")  # the same cell trained from scratch
    assert alone["key"] == large["key"]
    assert alone["matrices"] == large["matrices"] and alone["outcomes"] == large["outcomes"]


def test_the_training_fingerprint_ignores_the_evaluation_images_only(tmp_path):
    scenario = tiny_scenario("ext-class").config

    def fingerprints(**data: int) -> tuple[str, str]:
        config = scenario.model_copy(update={"data": scenario.data.model_copy(update=data)})
        loaded = load_scenario_data(config, tmp_path, torch.device("cpu"))
        return loaded.fingerprint, loaded.training_fingerprint

    base = fingerprints()
    more_queries = fingerprints(test_per_class=scenario.data.test_per_class + 5)
    more_training = fingerprints(train_per_class=scenario.data.train_per_class + 5)
    assert more_queries[0] != base[0] and more_queries[1] == base[1]
    assert more_training[1] != base[1]
