"""`benchbackcompat calibrate`: the preset as given and with 1.5x the epochs, the self-tests' changes and the checks,
first with a runner that returns hand-made records, then end to end on tiny data."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from benchbackcompat.results.calibrate import CalibrationOptions, calibrate, paired, self_tests
from benchbackcompat.cli import main
from benchbackcompat.errors import BenchError
from benchbackcompat.execution.request import RunRequest
from benchbackcompat.metrics import outcomes
from benchbackcompat.record import FinishedRecord, parse_record
from benchbackcompat.report.calibration import read_calibrations
from benchbackcompat.testing.scenarios import tiny_run_args

N = 1000  # queries per self-test


def single_update(seed: int, old_hits: int, reference_hits: int, epochs: int) -> dict:
    """An ext-class record whose old model answers the first ``old_hits`` of N queries, and its reference
    ``reference_hits``."""

    def hits(k: int) -> dict:
        values = np.zeros(N, dtype=bool)
        values[:k] = True
        return outcomes.encode(values)

    old, new = 100.0 * old_hits / N, 100.0 * reference_hits / N
    return {"status": "finished", "key": f"k{seed}{epochs}", "label": f"ext-class/independent/seed{seed}",
            "scenario": "ext-class", "kind": "ext-class", "method": "independent", "seed": seed, "dataset": "d",
            "config": {"train": {"epochs": epochs, "min_steps": 4000}}, "chance": {"cmc@1": 2.0},
            "matrices": {"cmc@1": [[old, None], [new, new]]},
            "metrics": {"cmc@1": {"old_self": old, "reference_self": new}},
            "outcomes": {"cmc@1": {"C": [[hits(old_hits), None], [hits(reference_hits), hits(reference_hits)]],
                                   "reference_self": hits(reference_hits)}}}


class Runner:
    """Records the requests it was given; the longer run's old models answer ``gain`` more queries."""

    def __init__(self, gain: int) -> None:
        self.calls: list[RunRequest] = []
        self.gain = gain

    def __call__(self, request: RunRequest):
        self.calls.append(request)
        longer = request.overrides.get("train.epochs") == 135
        return [parse_record(single_update(seed, 700 + (self.gain if longer else 0), 900, 135 if longer else 90))
                for seed in (0, 1, 2)]


def test_the_longer_run_multiplies_epochs_and_step_floor_and_the_changes_decide(tmp_path):
    options = CalibrationOptions(preset="cpu", seeds="0,1,2", out=tmp_path, summary=tmp_path / "calibration" / "s.json",
                                 run_args=("--set", "data.test_per_class=100"),
                                 request=RunRequest(scenarios="ext-class", methods="independent", preset="cpu",
                                                    seeds="0,1,2", overrides={"data.test_per_class": 100}))
    runner = Runner(gain=5)  # +0.5 points at every seed: its 3-seed t-interval lies inside ±2
    result = calibrate(options, runner)
    base, longer = runner.calls
    assert base.out == tmp_path / "base" and base.overrides == {"data.test_per_class": 100}
    assert longer.out == tmp_path / "longer"
    assert longer.overrides == {"data.test_per_class": 100, "train.epochs": 135,
                                "train.min_steps": 6000}  # 90 x 1.5, 4,000 x 1.5
    assert (base.preset, base.scenarios, base.methods, base.seeds) == ("cpu", ["ext-class"], ["independent"], [0, 1, 2])
    assert result.verdict == "calibrated" and result.text.endswith(f"wrote {options.summary}")
    (summary,) = read_calibrations([tmp_path])
    assert summary.epochs == (90, 135) and summary.min_steps == (4000, 6000)
    assert summary.command == (f"benchbackcompat calibrate --preset cpu --scenario ext-class --methods independent "
                               f"--seeds 0,1,2 --out {tmp_path} --summary {options.summary} -- --set data.test_per_class=100")
    old = next(c for c in summary.changes if c.model == "model 0")
    assert old.seeds == [0, 1, 2] and old.mean == pytest.approx(0.5) and -2 < old.low <= 0.5 <= old.high < 2


def test_a_change_beyond_the_tolerance_and_a_small_update_are_reported(tmp_path):
    result = calibrate(CalibrationOptions(seeds="0,1,2", out=tmp_path), Runner(gain=60))  # +6 points
    assert result.verdict == "not calibrated"
    assert "ext-class/independent/0: update gain 20.0 < 15 points" not in result.failures  # 90 - 70 = 20 >= 15
    assert any(f.startswith("not converged: ext-class independent model 0 +6.0") for f in result.failures)
    small = calibrate(CalibrationOptions(seeds="0,1,2", out=tmp_path, min_gain=25), Runner(gain=0))
    assert "ext-class/independent/0: update gain 20.0 < 25 points" in small.failures


def test_self_tests_are_the_diagonal_the_old_model_and_the_reference():
    record = FinishedRecord(key="k", label="l", scenario="ext-class", kind="ext-class", method="hoc", seed=0,
                            status="finished", matrices={"cmc@1": [[40.0, None], [35.0, 60.0]]},
                            metrics={"cmc@1": {"old_self": 42.0, "reference_self": 65.0}})
    assert self_tests(record, "cmc@1") == {"model 0": 40.0, "model 1": 60.0, "old_self": 42.0, "reference_self": 65.0}


def test_each_cell_is_paired_with_its_longer_run():
    hoc, er = ("cl2r", "hoc", 0), ("cl2r", "er", 0)
    pairs, failures = paired({hoc: "hoc 90", er: "er 90"}, {hoc: "hoc 135"})
    assert pairs == [(hoc, "hoc 90", "hoc 135")]
    assert failures == ["cl2r/er/0: no finished cell in the longer run"]


def test_no_finished_cell_is_one_clear_error(tmp_path):
    with pytest.raises(BenchError, match="no finished cell of ext-class .* computed top1"):
        calibrate(CalibrationOptions(out=tmp_path, metric="top1"), Runner(gain=0))


@pytest.mark.slow
def test_calibrate_command_trains_both_lengths_and_writes_the_summary(tmp_path, capsys):
    """A --base folder that also holds another evaluation size and another metric: only the cells the run plans
    are compared."""
    tiny = tiny_run_args(epochs=2)
    base = ["run", "--preset", "quick", "--scenario", "ext-class", "--methods", "independent", "--out",
            str(tmp_path / "base"), *tiny]
    assert main([*base, "--set", "data.test_per_class=6"]) == 0 and main([*base, "--set", 'metrics=["map"]']) == 0
    summary = tmp_path / "results" / "calibration" / "quick.json"
    assert main(["calibrate", "--preset", "quick", "--scenario", "ext-class", "--methods", "independent",
                 "--out", str(tmp_path), "--summary", str(summary), "--", *tiny_run_args(epochs=2)]) == 0
    out = capsys.readouterr().out
    assert "| ext-class  | independent |      0 | old_self" in out and "2 epochs" in out and "3 epochs" in out
    stored = json.loads(summary.read_text())
    assert stored["epochs"] == [2, 3] and stored["preset"] == "quick" and len(stored["cells"]) == 1
    assert {change["queries"] for change in stored["changes"]} == {6 * 12}  # 6 classes x 12 test images, not 6 x 6
    records = [json.loads(gzip.decompress(p.read_bytes())) for p in (tmp_path / "longer").glob("cells/*/record.json.gz")]
    assert records and all(r["config"]["train"]["epochs"] == 3 for r in records)


def test_calibrate_builds_one_request_of_its_options_and_the_run_arguments():
    from benchbackcompat.cli.run import request_parser, run_request

    own = {"preset": "cpu", "scenarios": "ext-class", "methods": "independent", "seeds": "0-1"}
    request = run_request(request_parser(required=False).parse_args(["--workers", "2", "--set", "train.epochs=3"]), own)
    assert (request.preset, request.scenarios, request.methods, request.seeds) == ("cpu", ["ext-class"], ["independent"], [0, 1])
    assert request.workers == 2 and request.overrides == {"train.epochs": 3} and request.share_models
    later = run_request(request_parser(required=False).parse_args(["--scenario", "both"]), own)
    assert later.scenarios == ["both"]  # a run argument after `--` wins, as it did on one command line
