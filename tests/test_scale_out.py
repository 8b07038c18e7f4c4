"""Many cells over several processes: shards, concurrent writers on one results directory, submitit jobs."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from benchbackcompat.cli import main
from benchbackcompat.errors import BenchError
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.execution.presets import resolve_run
from benchbackcompat.execution.plan import make_plan, select_shard
from benchbackcompat.store import ResultStore

TINY = [f"--set={assignment}" for assignment in (
    "data.num_classes=6", "data.train_per_class=30", "data.test_per_class=10", "data.open_classes=4",
    "train.epochs=1", "train.batch_size=32", "model.embedding_dim=16")]
RUN = ["--scenario", "ext-class", "--methods", "independent,l2", "--seeds", "0,1", *TINY]


def test_shards_partition_the_plan():
    run = resolve_run(preset="quick", scenarios=["ext-class", "both"], methods=["independent", "l2"], seeds=[0, 1, 2])
    cells = make_plan(run, PluginHost()).cells
    shards = [select_shard(cells, f"{i}/5") for i in range(5)]
    keys = [c.label for shard in shards for c in shard]
    assert sorted(keys) == sorted(c.label for c in cells) and len(set(keys)) == len(cells) == 12
    for bad in ("5/5", "1", "a/b", "-1/3"):
        with pytest.raises(BenchError, match="expected I/N"):
            select_shard(cells, bad)


@pytest.mark.slow
def test_two_concurrent_runs_on_one_directory_lose_and_duplicate_nothing(tmp_path):
    command = [sys.executable, "-m", "benchbackcompat", "run", "--out", str(tmp_path), *RUN]
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    computed = [int(re.search(r"(\d+) computed by this run", err).group(1)) for _, err in outputs]
    records = list(ResultStore(tmp_path).records())
    assert len(records) == 4 and all(r.status == "finished" for r in records)
    assert sum(computed) == 4  # every cell ran in exactly one of the two processes
    assert outputs[0][0] == outputs[1][0]  # and both print the same leaderboard
    assert len(list((tmp_path / "models").glob("*.pt"))) == 4  # shared old model + reference per seed, trained once


@pytest.mark.slow
def test_local_executor_runs_one_job_per_shard(tmp_path, capsys):
    pytest.importorskip("submitit")
    assert main(["run", "--out", str(tmp_path), *RUN, "--executor", "local", "--jobs", "2"]) == 0
    captured = capsys.readouterr()
    assert "submitted 2 local jobs" in captured.err and "| independent" in captured.out and "| l2" in captured.out
    records = list(ResultStore(tmp_path).records())
    workers = {r.worker for r in records}
    assert len(records) == 4 and len(workers) == 2  # two job processes, none of them this one
    assert all(not w.endswith(f":{__import__('os').getpid()}") for w in workers)


@pytest.mark.slow
def test_compile_and_channels_last_train_the_same_model(tmp_path):
    """Speed options leave the arithmetic unchanged up to rounding (and the checkpoints loadable). In fp32: under
    bf16 autocast (``amp = "auto"`` on CPUs with AVX512-BF16) the two paths round differently enough to move a
    tiny test set's score by one query."""
    run = ["--scenario", "ext-class", "--methods", "l2", *TINY, "--set", "train.amp=off"]
    assert main(["run", "--out", str(tmp_path / "plain"), *run]) == 0
    assert main(["run", "--out", str(tmp_path / "fast"), *run, "--compile", "--channels-last", "on"]) == 0
    (plain,), (fast,) = (list(ResultStore(tmp_path / d).records()) for d in ("plain", "fast"))
    curves = [ResultStore(tmp_path / d).curves(r.key)["1"] for d, r in (("plain", plain), ("fast", fast))]
    for a, b in zip(*curves, strict=True):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-3)
    for metric in ("cmc@1", "map"):
        for entry in ("self", "cross", "old_self"):
            assert fast.metrics[metric].statistic(entry) == pytest.approx(plain.metrics[metric].statistic(entry), abs=3.0)
