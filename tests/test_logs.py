"""Logs of a run whose output is redirected (CI, SLURM): plain lines, no bars, the facts a user needs."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from benchbackcompat.cli import main
from benchbackcompat.store import ResultStore
from benchbackcompat.testing.scenarios import tiny_run_args

TINY = [
    *tiny_run_args(epochs=2),
    # a constant rate: every logged and recorded rate must read exactly 0.05
    "--set", "train.schedule=constant", "--set", "train.lr=0.05", "--set", "train.warmup_epochs=0",
]
CONTROL = re.compile(r"[\r\x1b]")  # carriage returns (bars redrawn in place) and ANSI escape sequences


@pytest.mark.slow
def test_redirected_run_logs_plain_lines_with_cells_data_steps_and_resume(tmp_path):
    command = [sys.executable, "-m", "benchbackcompat", "run", "--scenario", "ext-class", "--methods", "l2",
               "--out", str(tmp_path), *TINY]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    log = done.stderr
    assert not CONTROL.search(log + done.stdout), repr(log)
    lines = log.splitlines()
    assert any(re.fullmatch(r"cell ext-class/l2/seed0 \(key [0-9a-f]{16}\): started", line) for line in lines)
    assert any(re.fullmatch(r"dataset embedded: (cache hit|no cache yet, building) .+\.pt", line) for line in lines)
    assert any(re.fullmatch(r"data embedded: 6 classes, 240 training, \d+ query.* images on cpu", line) for line in lines)
    assert "  ext-class/l2/seed0 step 1 of 2: 2 epochs, loss " in log and "lr 0.05 -> 0.05," in log
    assert any(re.fullmatch(r"cell ext-class/l2/seed0: finished in \d+\.\d s", line) for line in lines)
    record = next(ResultStore(tmp_path).records())
    assert [epoch["lr"] for epoch in ResultStore(tmp_path).curves(record.key)["1"]] == pytest.approx([0.05, 0.05])

    # an interrupted cell: the record and the last step are gone, the first step's checkpoint is kept
    cell = ResultStore(tmp_path).cell_dir(record.key)
    (cell / "record.json.gz").unlink()
    (cell / "step-1.pt").unlink()
    again = subprocess.run([*command, "-q"], capture_output=True, text=True, check=True)
    assert again.stderr == ""  # -q: warnings and errors only
    (cell / "record.json.gz").unlink()
    (cell / "step-1.pt").unlink()
    log_file = tmp_path / "run.log"
    assert main(["run", "--scenario", "ext-class", "--methods", "l2", "--out", str(tmp_path), *TINY,
                 "--log-file", str(log_file), "-v"]) == 0
    text = log_file.read_text()
    assert re.search(r"INFO resuming ext-class/l2/seed0 at step 1 of 2 \(1 finished steps loaded from ", text)
    assert re.search(r"DEBUG ext-class/l2/seed0 step-1 epoch 2/2: lr 0.05, loss ", text)  # -v: one line per epoch


def test_errors_are_one_line_each_and_bars_follow_one_switch(tmp_path, capsys):
    assert main(["run", "--scenario", "nope", "--methods", "l2", "--progress"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: unknown scenario (preset 'quick') 'nope'. Known: both, cl2r, ext-class, ext-data, iam-cl2r, model-zoo, "
        "multi-step, new-arch."]
    from benchbackcompat.runtime import logs

    logs.configure(progress=True)
    with logs.progress_bar(range(2), desc="outer") as outer:
        for _ in outer:
            for _ in logs.progress_bar(range(2), desc="inner", leave=False):
                logs.log.warning("something odd")
    err = capsys.readouterr().err
    assert "outer" in err and "inner" in err and "\r" in err  # drawn when asked for
    assert err.count("warning: something odd\n") == 4
    logs.configure()  # stderr is not a terminal here: no bar at all
    for _ in logs.progress_bar(range(2), desc="outer"):
        for _ in logs.progress_bar(range(2), desc="inner"):
            pass
    assert capsys.readouterr().err == ""


def test_a_step_of_one_epoch_says_epoch():
    from benchbackcompat.engine.cell import step_summary

    assert step_summary([{"loss": 2.0, "lr": 0.1}]) == "1 epoch, loss 2 -> 2, lr 0.1 -> 0.1"
    assert step_summary([{"loss": 2.0, "lr": 0.1}] * 2).startswith("2 epochs, ")
