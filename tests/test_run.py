"""End to end: run, store, skip finished cells, resume after SIGKILL with identical numbers."""
from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbackcompat.cli import main
from benchbackcompat.store import ResultStore
from benchbackcompat.testing.scenarios import tiny_run_args

pytestmark = pytest.mark.slow

# A tiny embedded configuration: seconds per cell on a CPU.
TINY = tiny_run_args(epochs=2)


def run_cli(out: Path, *args: str) -> int:
    return main(["run", "--out", str(out), *TINY, *args])


def test_single_update_run_stores_records_and_skips_them_again(tmp_path, capsys):
    assert run_cli(tmp_path, "--scenario", "both", "--methods", "independent,l2") == 0
    table = capsys.readouterr().out
    assert "| independent" in table and "| l2" in table and "P_com (cmc@1)" in table
    records = {r.method: r for r in ResultStore(tmp_path).records()}
    for record in records.values():
        assert record.status == "finished" and record.seed == 0
        C = record.matrices["cmc@1"]
        assert len(C) == 2 and all(0 <= v <= 100 for v in (C[0][0], C[1][0], C[1][1]))
        assert record.versions.torch and record.config["kind"] == "both"
    independent = records["independent"].metrics["cmc@1"]
    # the independent new model is the reference itself: P_up = 0, P_com = (cross - old)/(self - old)
    assert independent.p_up == pytest.approx(0.0)
    assert independent.reference_self == pytest.approx(independent.self)
    # the old model is shared: both methods report the same old self-test
    assert records["l2"].matrices["cmc@1"][0][0] == independent.old_self
    started = time.perf_counter()
    assert run_cli(tmp_path, "--scenario", "both", "--methods", "independent,l2") == 0
    assert time.perf_counter() - started < 5
    assert capsys.readouterr().out == table


def test_show_prints_the_matrix(tmp_path, capsys):
    assert run_cli(tmp_path, "--scenario", "ext-class", "--methods", "l2") == 0
    capsys.readouterr()
    assert main(["show", "ext-class/l2/seed0", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "cmc@1 (rows: query model t, columns: gallery model k)" in out and "| q1" in out and "p_com" in out


def test_replay_scenarios_run_er(tmp_path):
    replay = ["--methods", "er", "--set", "num_tasks=3", "--set", "initial_class_fraction=0.34"]
    assert run_cli(tmp_path, "--scenario", "cl2r", *replay) == 0
    assert run_cli(tmp_path, "--scenario", "iam-cl2r", *replay, "--set", "pretrain_classes=[4,8]", "--set", "replacements=[3]") == 0
    records = {r.scenario: r for r in ResultStore(tmp_path).records()}
    for name in ("cl2r", "iam-cl2r"):
        C = records[name].matrices["top1"]
        assert len(C) == 3 and records[name].metrics["top1"].AC is not None


def test_not_applicable_cells_are_recorded_not_fatal(tmp_path, capsys):
    assert run_cli(tmp_path, "--scenario", "ext-data", "--methods", "er,l2") == 0
    records = {r.method: r for r in ResultStore(tmp_path).records()}
    assert records["er"].status == "not-applicable" and "cl2r" in records["er"].reason
    assert records["l2"].status == "finished"


def _cli(out: Path) -> list[str]:
    return [sys.executable, "-m", "benchbackcompat", "run", "--out", str(out), *TINY,
            "--scenario", "multi-step", "--methods", "l2", "--set", "num_models=3", "--set", "train.epochs=3"]


def _matrix(out: Path) -> dict:
    (record,) = ResultStore(out).records()
    return record.matrices


def test_sigkill_halfway_then_resume_gives_the_uninterrupted_numbers(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    reference = tmp_path / "reference"
    subprocess.run(_cli(reference), check=True, env=env, capture_output=True)
    killed = tmp_path / "killed"
    process = subprocess.Popen(_cli(killed), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not list(killed.glob("cells/*/step-1.pt")) and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert list(killed.glob("cells/*/step-1.pt")) and not list(killed.glob("cells/*/record.json*"))
    subprocess.run(_cli(killed), check=True, env=env, capture_output=True)
    assert _matrix(killed) == _matrix(reference)
    curves = json.loads(gzip.decompress(next(killed.glob("cells/*/curves.json.gz")).read_bytes()))
    assert set(curves) == {"0", "1", "2"}
