"""``--workers auto``: how many cell processes a run starts, and the training images that decide it."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from benchbackcompat.cli import main
from benchbackcompat.execution import worker_count as auto
from benchbackcompat.execution.plan import assign_fingerprints, plan_of
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.execution.request import RunRequest
from benchbackcompat.store import ResultStore
from benchbackcompat.store.provenance import worker_name
from benchbackcompat.testing.scenarios import tiny_run_args

TINY = tiny_run_args(epochs=2)  # 6 classes of 40 training images, batch 32


def tiny_request(out: Path, scenario: str = "both", methods: str = "independent,l2", **options) -> RunRequest:
    overrides = dict(arg.split("=", 1) for arg in TINY[1::2])
    return RunRequest(scenarios=[scenario], methods=methods.split(","), out=out, overrides=overrides, **options)


@pytest.fixture
def two_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("scenario, overrides, expected", [
    # both: the old model trains on 3 of the 6 classes (120 images: 3 batches of 32 an epoch), the new one on all 6
    # (240 images: 7 batches); 2 epochs each: (3 + 7) x 2 x 32
    ("both", {}, (3 + 7) * 2 * 32),
    # ext-data: the old model on 30% of the images (72: 2 batches), the new one on all (7 batches)
    ("ext-data", {}, (2 + 7) * 2 * 32),
    # a step floor of 20 batches: 3 batches an epoch train ceil(20 / 3) = 7 epochs, 7 batches ceil(20 / 7) = 3
    ("both", {"train.min_steps": "20"}, (3 * 7 + 7 * 3) * 32),
])
def test_training_images_count_every_steps_batches(tmp_path, scenario, overrides, expected):
    request = tiny_request(tmp_path, scenario, "l2")
    request.overrides.update(overrides)
    plan = plan_of(request, PluginHost())
    data_of = assign_fingerprints(plan, torch.device("cpu"))
    (cell,) = plan.cells
    assert auto.training_images(cell, data_of(cell.scenario.config)) == expected


def test_auto_runs_one_cell_per_thread_when_the_run_is_worth_the_workers_start(tmp_path, monkeypatch, two_threads):
    plan = plan_of(tiny_request(tmp_path), PluginHost())
    assert auto.worker_count(tiny_request(tmp_path), plan) == 1  # 2 x 640 images: below the floor
    monkeypatch.setattr(auto, "MIN_IMAGES", 1280)
    assert auto.worker_count(tiny_request(tmp_path), plan) == 2
    monkeypatch.setattr(auto, "MIN_IMAGES", 1281)
    assert auto.worker_count(tiny_request(tmp_path), plan) == 1
    assert auto.worker_count(tiny_request(tmp_path, workers=3), plan) == 3  # a number is kept as given


@pytest.mark.parametrize("options", [{"executor": "local"}, {"force": True}, {"rerun": ["l2"]}, {"dry_run": True}])
def test_auto_stays_in_one_process_where_workers_cannot_run(tmp_path, monkeypatch, two_threads, options):
    monkeypatch.setattr(auto, "MIN_IMAGES", 0)
    request = tiny_request(tmp_path, **options)
    assert auto.worker_count(request, plan_of(request, PluginHost())) == 1


def test_auto_stays_in_one_process_on_one_thread_or_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(auto, "MIN_IMAGES", 0)
    request = tiny_request(tmp_path)
    plan = plan_of(request, PluginHost())
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert auto.worker_count(request, plan) == 1
    finally:
        torch.set_num_threads(threads)
    monkeypatch.setattr(auto, "resolve_device", lambda spec: torch.device("cuda"))
    assert auto.worker_count(request, plan) == 1


@pytest.mark.slow
def test_auto_counts_only_unfinished_cells_and_its_workers_compute_them(tmp_path, monkeypatch, two_threads, capsys):
    """A finished cell is not counted (one pending cell: one process); with two pending the default run hands
    them to two worker processes, which the records name."""
    monkeypatch.setattr(auto, "MIN_IMAGES", 0)
    args = ["run", "--out", str(tmp_path), *TINY, "--scenario", "both", "--no-progress"]
    assert main([*args, "--methods", "l2"]) == 0
    assert [r.worker for r in ResultStore(tmp_path).records()] == [worker_name()]  # one cell: this process
    plan = plan_of(tiny_request(tmp_path, methods="l2,independent"), PluginHost())
    assert auto.worker_count(tiny_request(tmp_path, methods="l2,independent"), plan) == 1
    capsys.readouterr()
    assert main([*args, "--methods", "independent,hoc"]) == 0
    err = capsys.readouterr().err
    assert "workers auto: 2 cell processes of 1 thread(s) each (2 cells to compute" in err
    workers = {r.method: r.worker for r in ResultStore(tmp_path).records()}
    assert workers["l2"] == worker_name() and worker_name() not in (workers["independent"], workers["hoc"])


def test_the_python_api_runs_in_one_process_unless_asked(tmp_path, monkeypatch, two_threads):
    """Workers re-run the calling script: the API's default is 1, and the request it builds says so."""
    import benchbackcompat
    from benchbackcompat.execution import runner

    seen = []
    monkeypatch.setattr(runner, "worker_count", lambda request, plan: seen.append(request.workers) or 1)
    benchbackcompat.run("both", "l2", out=tmp_path, overrides=dict(arg.split("=", 1) for arg in TINY[1::2]),
                        workers=None)
    assert seen == [1]
