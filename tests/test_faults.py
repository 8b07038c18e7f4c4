"""Fault injection: SIGKILL at many points, divergence, plugin bugs, corrupt files, out of memory.

Runs go through a fork server: one subprocess imports the harness once, then forks a child per
``benchbackcompat run``; ``BENCHBACKCOMPAT_FAULT`` points (runtime/faults.py) make the child
SIGKILL itself at an exact place (a real kill: no cleanup, no ``finally``), and the test checks
that re-running the same command gives the record of an uninterrupted run.
"""
from __future__ import annotations

import errno
import fractions
import gzip
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from benchbackcompat.runtime import faults
from benchbackcompat.store.checkpoint import checksum_path, load_checkpoint, save_checkpoint
from benchbackcompat.engine.evaluate import extract_features, score
from benchbackcompat.errors import BenchError
from benchbackcompat.store import ResultStore
from helpers import install_plugin

TINY = [
    "--set", "data.num_classes=6", "--set", "data.train_per_class=40", "--set", "data.test_per_class=12",
    "--set", "data.open_classes=4", "--set", "data.pretrain_classes=8", "--set", "data.image_size=16",
    "--set", "train.epochs=1", "--set", "train.batch_size=32", "--set", "model.embedding_dim=16",
]
# 3 models on 2, 4, 6 classes: 2 + 5 + 7 training batches; step 0 is l2's shared standard model
MULTI = ["--scenario", "multi-step", "--methods", "l2", "--set", "num_models=3"]

SERVER = r"""
import json, os, sys, traceback
import benchbackcompat.execution.plan  # everything is imported once, before forking; the children compute
from benchbackcompat.cli import main
from benchbackcompat.runtime import faults

for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(log, 1)
        os.dup2(log, 2)
        code = 99
        try:
            faults.configure(job["fault"])
            code = main(job["argv"])
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    print(json.dumps({"signal": signal, "rc": None if signal else os.WEXITSTATUS(status)}), flush=True)
"""


class Runner:
    """Client of the fork server: ``run(out, fault)`` -> (signal, exit code, log text of that run)."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != faults.ENV} | {"OMP_NUM_THREADS": "1"}
        self.process = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env)

    def run(self, out: Path, *extra: str, fault: str | None = None) -> tuple[int | None, int | None, str]:
        log = out.parent / f"{out.name}.log"
        start = log.stat().st_size if log.exists() else 0
        argv = ["run", "--out", str(out), *TINY, *MULTI, *extra]
        self.process.stdin.write(json.dumps({"argv": argv, "fault": fault, "log": str(log)}) + "\n")
        self.process.stdin.flush()
        result = json.loads(self.process.stdout.readline())
        return result["signal"], result["rc"], log.read_text()[start:]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture(scope="module")
def runner():
    server = Runner()
    yield server
    server.close()


@pytest.fixture(scope="module")
def reference(runner, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("faults") / "reference"
    signal, rc, log = runner.run(out)
    assert (signal, rc) == (None, 0), log
    (record,) = ResultStore(out).records()
    return {"out": out, "record": record}


def outcome(out: Path) -> dict:
    """What a resumed run must reproduce exactly, the record's results and its training curves (``shared_models``
    is left out: a step resumed from its checkpoint does not list the shared model it was made from, a provenance
    gap of run_steps)."""
    store = ResultStore(out)
    (record,) = store.records()
    return {**{k: getattr(record, k) for k in ("status", "matrices", "metrics")}, "curves": store.curves(record.key)}


# --- SIGKILL at any moment loses at most the unfinished step ---------------------------------------------

KILLS = {
    "training the shared step-0 model": ("train-batch@1:kill", []),
    "training step 1": ("train-batch@4:kill", ["step-0.pt"]),
    "training step 2 (last batch)": ("train-batch@14:kill", ["step-0.pt", "step-1.pt"]),
    "evaluating": ("extract-batch@2:kill", ["step-0.pt", "step-1.pt", "step-2.pt"]),
    "writing the shared model": ("write:*.pt@1:kill", []),
    "writing a step checkpoint": ("write:step-1.pt:kill", ["step-0.pt"]),
    "between a checkpoint and its checksum": ("write:step-1.pt.sha256:kill", ["step-0.pt"]),
    "writing the result": ("write:record.json.gz:kill", ["step-0.pt", "step-1.pt", "step-2.pt"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("where", list(KILLS))
def test_sigkill_then_resume_gives_the_uninterrupted_record(where, runner, reference, tmp_path):
    fault, finished_steps = KILLS[where]
    out = tmp_path / "run"
    signal, rc, log = runner.run(out, fault=fault)
    assert signal == 9, log
    assert not list(out.glob("cells/*/record.json*"))
    verified = sorted(p.name for p in out.glob("cells/*/step-*.pt") if checksum_path(p).is_file())
    assert verified == finished_steps  # every finished step survived, nothing else claims to have
    signal, rc, log = runner.run(out)
    assert (signal, rc) == (None, 0), log
    if "checksum" in where:
        assert "step-1.pt has no checksum (its write was interrupted); recomputing it" in log
    assert outcome(out) == outcome(reference["out"])


@pytest.mark.slow
def test_repeated_kills_in_one_lineage(runner, reference, tmp_path):
    """Killed in step 0, then in step 1, then while writing the result: each run resumes the last."""
    out = tmp_path / "run"
    for fault in ("train-batch@2:kill", "train-batch@5:kill", "write:record.json.gz:kill"):
        signal, _, log = runner.run(out, fault=fault)
        assert signal == 9, log
    assert runner.run(out)[:2] == (None, 0)
    assert outcome(out) == outcome(reference["out"])


# --- corrupted or truncated files are detected, reported and recomputed ----------------------------------

@pytest.mark.slow
def test_corrupt_checkpoints_and_results_are_reported_and_recomputed(runner, reference, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(reference["out"], out)
    cell = next(out.glob("cells/*"))
    step1 = cell / "step-1.pt"
    step1.write_bytes(step1.read_bytes()[: step1.stat().st_size // 2])  # truncated
    (shared,) = out.glob("models/*.pt")
    for path in (cell / "step-0.pt", shared):  # flipped bits inside the tensor data
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    record = cell / "record.json.gz"
    tampered = gzip.decompress(record.read_bytes()).decode().replace('"AA": ', '"AA": 1', 1)  # still valid JSON
    record.write_bytes(gzip.compress(tampered.encode()))
    signal, rc, log = runner.run(out)
    assert (signal, rc) == (None, 0), log
    assert f"result {record} does not match its checksum" in log
    assert f"checkpoint {step1} does not match its checksum" in log
    assert f"checkpoint {cell / 'step-0.pt'} does not match its checksum" in log
    assert f"checkpoint {shared} does not match its checksum" in log
    trained = {"standard-0": "shared standard-0: trained", "step-1": "multi-step/l2/seed0 step 1 of 3:",
               "step-2": "multi-step/l2/seed0 step 2 of 3:"}
    retrained = {tag for tag, line in trained.items() if line in log}
    assert retrained == {"standard-0", "step-1"}  # the intact step 2 was loaded, not retrained
    assert outcome(out) == outcome(reference["out"])


@pytest.mark.slow
@pytest.mark.parametrize("written", ["now", "before checkpoints named their step"])
def test_a_checkpoint_copied_over_another_step_is_set_aside_and_the_step_recomputed(written, runner, reference, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(reference["out"], out)
    cell = next(out.glob("cells/*"))
    (cell / "record.json.gz").unlink()
    step0, step2 = cell / "step-0.pt", cell / "step-2.pt"
    if written == "now":  # step 0 and its checksum copied over step 2's: intact, but another step's
        shutil.copy(step0, step2)
        shutil.copy(checksum_path(step0), checksum_path(step2))
    else:  # without the step and training key a checkpoint records now: only its shapes tell (2 classes, not 6)
        payload = load_checkpoint(step0)
        del payload["step"], payload["training_key"]
        save_checkpoint(step2, payload)
    signal, rc, log = runner.run(out)
    assert (signal, rc) == (None, 0), log
    (warning,) = [line for line in log.splitlines() if "set aside" in line]
    assert f"checkpoint {step2}: it does not fit step 2 of multi-step/l2/seed0 (" in warning
    assert ("it holds step 0, not 2" if written == "now" else "has shape [2, ") in warning
    assert warning.endswith("; set aside as step-2.pt.unfit, recomputing the step")
    assert (cell / "step-2.pt.unfit").is_file() and "multi-step/l2/seed0 step 2 of 3:" in log  # retrained
    assert outcome(out) == outcome(reference["out"])


@pytest.mark.slow
def test_a_shared_model_overwritten_by_another_model_is_set_aside_and_retrained(runner, reference, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(reference["out"], out)
    cell = next(out.glob("cells/*"))
    for name in ("record.json.gz", "step-0.pt"):  # step 0 is the shared standard model: it is loaded from models/
        (cell / name).unlink()
    (shared,) = out.glob("models/*.pt")
    shutil.copy(cell / "step-2.pt", shared)  # 6 classes over the 2-class standard model, checksum and all
    shutil.copy(checksum_path(cell / "step-2.pt"), checksum_path(shared))
    signal, rc, log = runner.run(out)
    assert (signal, rc) == (None, 0), log
    (warning,) = [line for line in log.splitlines() if "set aside" in line]
    assert f"checkpoint {shared}: it is not shared model standard-0 (" in warning and "has shape [6, " in warning
    assert warning.endswith("retraining it") and "shared standard-0: trained" in log
    assert outcome(out) == outcome(reference["out"])


@pytest.mark.parametrize("damage", ["truncate", "edit", "drop-checksum", "not-json", "not-gzip"])
def test_damaged_record_is_not_used(damage, tmp_path, caplog):
    store = ResultStore(tmp_path)
    cell = {"key": "abc", "label": "s/m/seed0", "scenario": "s", "kind": "ext-class", "method": "m", "seed": 0}
    path = store.write_record("abc", {**cell, "status": "finished", "metrics": {"cmc@1": {"AA": 12.5}},
                                      "matrices": {"cmc@1": [[10.0, None], [15.0, 12.5]]}})  # AA = 37.5 / 3
    assert store.record("abc").metrics["cmc@1"].AA == 12.5
    text = gzip.decompress(path.read_bytes()).decode()
    damaged = {
        "truncate": path.read_bytes()[: path.stat().st_size // 2],
        "edit": gzip.compress(text.replace("12.5", "13.5").encode()),
        "drop-checksum": gzip.compress(json.dumps({k: v for k, v in json.loads(text).items() if k != "sha256"}).encode()),
        "not-json": gzip.compress(b"\x00\xff"),
        "not-gzip": text.encode(),
    }[damage]
    path.write_bytes(damaged)
    assert ResultStore(tmp_path).record("abc") is None
    assert list(ResultStore(tmp_path).records()) == []
    assert f"result {path}" in caplog.text


def test_checkpoint_checksum_round_trip_and_corruption(tmp_path, caplog):
    path = tmp_path / "c.pt"
    save_checkpoint(path, {"w": torch.arange(6.0), "curve": [{"loss": 1.5}]})
    assert torch.equal(load_checkpoint(path)["w"], torch.arange(6.0))
    checksum_path(path).write_text("0" * 64)
    assert load_checkpoint(path) is None and "does not match its checksum" in caplog.text
    assert load_checkpoint(tmp_path / "missing.pt") is None


# --- unsafe checkpoints are refused -------------------------------------------------------------------------

class RunsCode:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("payload", ["code", "class"])
def test_checkpoint_needing_arbitrary_unpickling_is_refused(payload, tmp_path):
    marker = tmp_path / "executed"
    value = RunsCode(marker) if payload == "code" else fractions.Fraction(1, 3)
    path = tmp_path / "step-0.pt"
    save_checkpoint(path, {"model": {}, "extra": value})  # a valid checksum: only the content is unsafe
    with pytest.raises(BenchError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert "needs arbitrary unpickling" in message and "refused" in message and "\n" not in message
    assert ("system" in message) if payload == "code" else ("fractions.Fraction" in message)
    assert not marker.exists()


# --- divergence and plugin bugs fail only their cell ----------------------------------------------------------

@pytest.fixture
def buggy_plugin(tmp_path, monkeypatch):
    """An installed third-party method whose loss raises at step 1."""
    install_plugin(tmp_path, "buggy_method", """
        import benchbackcompat
        from bbc_baselines.l2 import L2

        class Buggy(L2):
            name = "buggy"
            description = "raises inside its loss once an old model exists"

            def loss(self, model, batch, ctx):
                if ctx.old_model is not None:
                    return {"loss": 1 / 0}
                return super().loss(model, batch, ctx)

        @benchbackcompat.hookimpl
        def bbc_register_methods():
            return [Buggy]
""", dist="buggy-plugin", entry="buggy")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("buggy_method", None)


@pytest.mark.slow
def test_diverged_and_failed_cells_do_not_stop_the_others(buggy_plugin, tmp_path, capsys):
    from benchbackcompat.cli import main

    out = tmp_path / "run"
    argv = ["run", "--out", str(out), *TINY, "--scenario", "multi-step", "--set", "num_models=2",
            "--methods", "independent,l2,buggy", "--set", "methods.l2.weight=1e30"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    records = {r.method: r for r in ResultStore(out).records()}
    assert records["independent"].status == "finished"
    diverged = records["l2"]
    assert diverged.status == "diverged" and diverged.step == 1 and diverged.epoch == 0
    assert diverged.batch >= 1 and diverged.last_finite_loss > 1e20  # the finite loss before the NaN/Inf
    assert "buggy" not in records  # failed cells are not recorded, so a re-run retries them
    (trace,) = out.glob("cells/*/traceback.txt")
    assert "ZeroDivisionError" in trace.read_text() and "buggy_method.py" in trace.read_text()
    board = next(line for line in captured.out.splitlines()  # the row's one reason is a footnote on its label
                 if line.startswith("|") and re.split(r"\[\^?\d", line.split("|")[1].strip())[0].strip() == "l2")
    assert "nan" in board and "0.000" not in board
    assert "multi-step/l2/seed0: diverged (loss diverged (NaN/Inf) at step 1, epoch 0" in captured.err
    assert f"multi-step/buggy/seed0: failed (ZeroDivisionError: division by zero; traceback in {trace})" in captured.err
    assert main(argv) == 1  # only the failed cell runs again
    assert "1 failed" in capsys.readouterr().err


# --- out of memory ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_oom_in_training_fails_the_cell_naming_the_batch_size(runner, tmp_path):
    signal, rc, log = runner.run(tmp_path / "run", fault="train-batch@2:oom")
    assert (signal, rc) == (None, 1), log
    assert ("multi-step/l2/seed0: failed (TrainingOutOfMemory: out of cpu memory training step 0 at batch size 32 "
            "(injected out of memory at train-batch); lower it, e.g. --set train.batch_size=16") in log


@pytest.mark.slow
def test_oom_in_evaluation_retries_with_smaller_chunks(runner, reference, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(reference["out"], out)
    next(out.glob("cells/*/record.json.gz")).unlink()  # evaluate again from the stored steps
    signal, rc, log = runner.run(out, fault="extract-batch@1:oom")
    assert (signal, rc) == (None, 0), log
    assert "out of memory in feature extraction with chunks of 512; retrying with 256" in log
    assert outcome(out) == outcome(reference["out"])


class OutOfMemoryAbove:
    """Features / similarities that run out of memory for inputs with more than ``limit`` rows."""

    def __init__(self, limit: int) -> None:
        self.limit, self.sizes = limit, []

    def __call__(self, x, *rest):
        self.sizes.append(len(x))
        if len(x) > self.limit:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return x.flatten(1).float() if not rest else x @ rest[0].T


class Images:
    def __init__(self, n: int) -> None:
        self.images = torch.randint(0, 255, (n, 3, 4, 4), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.images)


def test_feature_extraction_halves_its_batches_on_oom():
    kwargs = dict(mean=(0.5,) * 3, std=(0.25,) * 3, device=torch.device("cpu"), amp="off")

    def extract(oom: OutOfMemoryAbove) -> torch.Tensor:
        method = types.SimpleNamespace(features=lambda model, x: oom(x))
        return extract_features(torch.nn.Identity(), method, Images(50), batch_size=64, **kwargs)

    oom = OutOfMemoryAbove(12)
    assert torch.equal(extract(oom), extract(OutOfMemoryAbove(10**9)))
    assert oom.sizes[:4] == [50, 32, 16, 8] and max(oom.sizes[4:]) <= 8  # halved until it fits


def test_scoring_halves_its_query_chunks_on_oom():
    gen = torch.Generator().manual_seed(0)
    feats = torch.randn(40, 8, generator=gen)
    data = types.SimpleNamespace(query=types.SimpleNamespace(labels=torch.arange(40) % 5), gallery=None)
    expected, expected_hits = score("cmc@1", "loo", feats, feats, data, OutOfMemoryAbove(10**9), None)
    similarity = OutOfMemoryAbove(7)
    value, hits = score("cmc@1", "loo", feats, feats, data, similarity, None, chunk_size=64)
    assert value == expected and (hits == expected_hits).all()
    assert similarity.sizes[:4] == [40, 32, 16, 8] and set(similarity.sizes[4:]) <= {4}


def test_oom_at_chunk_size_one_and_other_errors_are_not_retried():
    with pytest.raises(torch.OutOfMemoryError):
        faults.halve_on_oom(torch.OutOfMemoryError("out of memory"), 1, "x")
    with pytest.raises(ValueError):
        faults.halve_on_oom(ValueError("bug"), 64, "x")
    assert faults.halve_on_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"), 64, "x") == 32


# --- a full disk names the file it could not write ------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("file", ["cell.json", "record.json.gz", "step-1.pt"])
def test_a_full_disk_names_the_file_it_could_not_write(file, runner, tmp_path):
    out = tmp_path / "run"
    signal, rc, log = runner.run(out, fault=f"write:{file}:full")
    where = rf"{re.escape(str(out))}/cells/[0-9a-f]{{16}}/{re.escape(file)}"
    if file == "step-1.pt":  # inside a cell: the cell fails (not recorded, so a re-run retries it), naming the file
        assert (signal, rc) == (None, 1), log
        assert re.search(rf"multi-step/l2/seed0: failed \(OSError: \[Errno 28\] No space left on device: '{where}'", log)
    else:  # the queue file or the result: the run stops with one line naming the file
        assert (signal, rc) == (None, 2), log
        (line,) = [line for line in log.splitlines() if "No space left on device" in line]
        assert re.fullmatch(rf"error: cannot access {where}: No space left on device; check the path, its permissions "
                            "and the free space", line), line
    assert not list(out.rglob("*.tmp"))  # the partial file is removed: it would only take more of the full disk


def test_a_write_that_fails_in_the_middle_names_its_file_and_leaves_no_partial_file(tmp_path, monkeypatch):
    from benchbackcompat.store.checkpoint import atomic_write_bytes

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as the kernel reports it: no file name

    monkeypatch.setattr(os, "fsync", full)
    path = tmp_path / "cells" / "abc" / "record.json.gz"
    with pytest.raises(OSError) as info:
        atomic_write_bytes(path, b"{}")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(path)
    assert list(path.parent.iterdir()) == []


# --- the fault-injection switch itself ----------------------------------------------------------------------------

def test_fault_spec_counts_hits_and_rejects_bad_specs():
    try:
        faults.configure("train-*@3:raise")
        faults.fault_point("train-batch")
        faults.fault_point("extract-batch")
        faults.fault_point("train-batch")
        with pytest.raises(RuntimeError, match="injected fault at train-batch"):
            faults.fault_point("train-batch")
        for bad in ("train-batch", "train-batch:explode", "x@0:kill", "@2:kill"):
            with pytest.raises(BenchError, match="BENCHBACKCOMPAT_FAULT"):
                faults.configure(bad)
    finally:
        faults.configure(None)
    faults.fault_point("train-batch")  # cleared: nothing happens


# --- results you can trust: files and locks ------------------------------------------------------------------

def test_records_are_strict_json_with_nan_as_null(tmp_path):
    store = ResultStore(tmp_path)
    cell = {"key": "a" * 16, "label": "s/m/seed0", "scenario": "s", "kind": "ext-class", "method": "m", "seed": 0}
    path = store.write_record("a" * 16, {**cell, "status": "finished",
                                         "matrices": {"m": [[1.0, float("nan")], [float("inf"), 2.0]]}})

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    record = json.loads(gzip.decompress(path.read_bytes()), parse_constant=refuse)
    assert record["matrices"]["m"] == [[1.0, None], [None, 2.0]]
    assert store.record("a" * 16).matrices["m"] == [[1.0, None], [None, 2.0]]


def test_temporary_files_of_killed_writers_are_removed_on_the_next_run(tmp_path):
    store = ResultStore(tmp_path)
    folder = store.cell_dir("a" * 16)
    folder.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = folder / f".record.json.gz.{int(dead.stdout)}.tmp"
    live = folder / f".record.json.gz.{os.getpid()}.tmp"
    young = folder / f".step-0.pt.{int(dead.stdout)}.tmp"
    for path in (orphan, live, young):
        path.write_text("partial")
    for path in (orphan, live):
        os.utime(path, (0, 0))
    assert store.remove_orphan_temporaries() == [orphan]
    assert not orphan.exists() and live.exists() and young.exists()


def test_a_lock_names_its_holder_and_gives_up_after_the_timeout(tmp_path):
    import time

    from benchbackcompat.store.locks import file_lock

    path = tmp_path / "locks" / "cell-x.lock"
    with file_lock(path):  # flock locks belong to the open file, so a second open waits even in this process
        started = time.monotonic()
        with pytest.raises(BenchError) as info:
            with file_lock(path, timeout=0.5):
                pass
        assert 0.5 <= time.monotonic() - started < 5
    message = str(info.value)
    assert f"pid {os.getpid()} since " in message and "--lock-timeout" in message and "\n" not in message
    with file_lock(path, timeout=0.5) as mine:  # released: taken at once
        assert mine


def test_a_process_waiting_for_a_cell_names_the_cell_and_its_holder(tmp_path, caplog):
    store = ResultStore(tmp_path, lock_timeout=0.3)
    with store.cell_lock("ab" * 8), caplog.at_level("INFO", logger="benchbackcompat"):
        with pytest.raises(BenchError):
            with store.cell_lock("ab" * 8, label="both/hbct/seed0"):
                pass
    assert f"waiting for cell both/hbct/seed0, held by {platform.node()} pid {os.getpid()} since " in caplog.text


def test_a_traceback_that_cannot_be_written_does_not_crash_the_failure_handler(tmp_path, caplog):
    from benchbackcompat.engine.cell import save_traceback

    store = ResultStore(tmp_path)
    store.cell_dir("a" * 16).parent.mkdir(parents=True)
    store.cell_dir("a" * 16).write_text("a file where the cell folder should be")
    try:
        raise RuntimeError("plugin bug")
    except RuntimeError:
        assert save_traceback(store, "a" * 16) is None
    assert "cannot write" in caplog.text and "the traceback is lost" in caplog.text


# --- a leaderboard killed while rendering leaves the previous one ---------------------------------------------------

def leaderboard_files(out: Path) -> dict[str, bytes]:
    """The files a reader of ``out`` sees (a killed rendering's hidden staging folder, removed by the next, aside)."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and not p.relative_to(out).parts[0].startswith(".rendering-")}


def links_resolve(out: Path) -> None:
    for page in out.glob("*.md"):
        for link in re.findall(r"\]\((figures/[^)]+)\)", page.read_text()):
            assert (out / link).is_file(), (page.name, link)


@pytest.mark.parametrize("fault", ["write:embedded-quick.md:kill", "write:README.md:raise", "swap:embedded-quick.md:kill"])
def test_a_leaderboard_killed_while_rendering_leaves_the_old_pages_and_the_files_it_does_not_own(fault, tmp_path,
                                                                                                  monkeypatch):
    from benchbackcompat.cli import main

    records = json.loads((Path(__file__).parent / "fixtures" / "leaderboard_records.json").read_text())
    old, new = ResultStore(tmp_path / "old"), ResultStore(tmp_path / "new")
    for record in records:
        old.write_record(record["key"], record)
        if record["scenario"] != "multi-step":  # the new results lose a scenario: its figures go
            new.write_record(record["key"], record)
    board = tmp_path / "board"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "946684800")  # 2000-01-01
    assert main(["leaderboard", "--results", str(tmp_path / "old"), "--out", str(board)]) == 0
    (board / "records").mkdir()  # files added to the rendering's folder afterwards
    (board / "records" / "cell.json").write_text("not the renderer's")
    (board / "NOTES.md").write_text("not the renderer's either")
    before = leaderboard_files(board)
    multi_step = {name for name in before if name.startswith("figures/embedded-quick-multi-step-")}
    assert len(multi_step) == 2  # the matrices and the AA_tau curves
    env = {**os.environ, faults.ENV: fault, "SOURCE_DATE_EPOCH": "1924905600"}  # 2030-12-31
    argv = [sys.executable, "-m", "benchbackcompat", "leaderboard", "--results", str(tmp_path / "new"), "--out", str(board)]
    result = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert result.returncode == (-9 if fault.endswith("kill") else 1), result.stderr
    if fault.startswith("swap"):  # killed while moving the new files in: whichever page a reader opens is whole
        links_resolve(board)
        assert {name: before[name] for name in ("records/cell.json", "NOTES.md")} == {
            name: (board / name).read_bytes() for name in ("records/cell.json", "NOTES.md")}
    else:  # killed or failed while rendering: the folder is the old rendering, byte for byte
        assert leaderboard_files(board) == before
    assert main(["leaderboard", "--results", str(tmp_path / "new"), "--out", str(board)]) == 0  # the next run repairs it
    assert not list(board.glob(".rendering-*"))  # the killed rendering's folder is removed
    after = leaderboard_files(board)
    assert after["records/cell.json"] == b"not the renderer's" and after["NOTES.md"] == b"not the renderer's either"
    assert not multi_step & set(after) and "multi-step" not in after["embedded-quick.md"].decode()
    links_resolve(board)
    fresh = tmp_path / "fresh"
    assert main(["leaderboard", "--results", str(tmp_path / "new"), "--out", str(fresh)]) == 0
    rendered = leaderboard_files(fresh)
    assert set(after) == set(rendered) | {"records/cell.json", "NOTES.md"}  # nothing of the old rendering is left
    assert all(after[name] == rendered[name] for name in rendered if name.endswith(".png"))


# --- worker processes: a signal, a killed worker, a hung cell -------------------------------------------------------

WORKERS = [*TINY, "--scenario", "ext-class", "--methods", "independent,l2", "--workers", "2"]
HUNG, HEALTHY = "ext-class/l2/seed0", "ext-class/independent/seed0"


def parents() -> dict[int, int]:
    """pid -> parent pid of every process (from /proc)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            found[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return found


def descendants(pid: int) -> set[int]:
    table, found, frontier = parents(), set(), {pid}
    while frontier:
        frontier = {child for child, parent in table.items() if parent in frontier} - found
        found |= frontier
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (ProcessLookupError, OSError, IndexError):
        return False


def wait_until(condition, seconds: float, what: str) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.5)


def start_run(out: Path, fault: str, *extra: str) -> tuple[subprocess.Popen, Path]:
    log = out.parent / f"{out.name}.log"
    env = {**os.environ, faults.ENV: fault, "OMP_NUM_THREADS": "1"}
    with log.open("w") as stream:
        process = subprocess.Popen([sys.executable, "-m", "benchbackcompat", "run", "--out", str(out), *WORKERS, *extra],
                                   stdout=stream, stderr=subprocess.STDOUT, env=env)
    return process, log


def statuses(out: Path) -> dict[str, str]:
    return {record.label: record.status for record in ResultStore(out).records()}


def held_cells(out: Path) -> set[str]:
    """Labels of the cells whose lock a process holds, as the holders wrote their names into the lock files (a killed
    holder's name stays)."""
    store = ResultStore(out)
    return {(store.cell_entry(path.stem[5:]) or {}).get("label") for path in out.glob("locks/cell-*.lock")
            if path.stat().st_size}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="finds the run's processes in /proc")
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_a_signal_to_a_workers_run_leaves_no_worker_behind(signal_name, tmp_path):
    """One cell finished, the other hung in its worker (in its --cell-timeout child for SIGKILL): SIGTERM or SIGINT
    to the run alone stops its workers and exits at once with one line; a run killed outright takes its workers
    (and their cell children) with it."""
    import signal

    out = tmp_path / "run"
    extra = ["--cell-timeout", "600"] if signal_name == "SIGKILL" else []
    process, log = start_run(out, f"cell:{HUNG}:hang", *extra)
    seen: set[int] = set()
    try:
        def hung() -> bool:
            seen.update(descendants(process.pid))
            grandchildren = {pid for pid in seen if parents().get(pid) not in (process.pid, None)}
            assert process.poll() is None, log.read_text()
            return (statuses(out).get(HEALTHY) == "finished" and HUNG in held_cells(out)
                    and (not extra or any(map(running, grandchildren))))
        wait_until(hung, 300, "one cell finished, the other hung")
        os.kill(process.pid, getattr(signal, signal_name))
        rc = process.wait(timeout=60)
        wait_until(lambda: not any(map(running, seen)), 30, "every process of the run gone")
    finally:
        for pid in [process.pid, *seen]:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=60)
    text = log.read_text()
    assert "Traceback" not in text, text
    if signal_name == "SIGKILL":
        assert rc == -9
    else:
        expected = {"SIGTERM": (143, "error: stopped by SIGTERM: "), "SIGINT": (130, "error: interrupted: ")}
        code, line = expected[signal_name]
        assert rc == code and text.splitlines()[-1] == f"{line}finished steps are saved; run the same command again to resume"
    store = ResultStore(out)
    (key,) = [path.name for path in out.glob("cells/*") if (store.cell_entry(path.name) or {}).get("label") == HUNG]
    with store.cell_lock(key, blocking=False) as free:
        assert free  # the hung cell is free for the next run, which resumes it
    assert statuses(out) == {HEALTHY: "finished"}

def finish_run(out: Path, fault: str, *extra: str) -> tuple[int, str]:
    """:func:`start_run` waited for (at most 10 minutes, then killed): its exit status and its output."""
    process, log = start_run(out, fault, *extra)
    try:
        return process.wait(timeout=600), log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=60)


@pytest.mark.slow
def test_a_killed_worker_costs_only_its_cell(tmp_path):
    """The cell kills its worker as the out-of-memory killer would (and the worker that takes it up next): the healthy
    cell is finished and reported, each death is one line naming the cell, the run ends non-zero."""
    out = tmp_path / "run"
    rc, text = finish_run(out, f"cell:{HUNG}:kill")
    assert rc == 1 and "Traceback" not in text, text
    assert statuses(out) == {HEALTHY: "finished"}
    deaths = [line for line in text.splitlines() if "was killed by SIGKILL (as the out-of-memory killer does)" in line]
    assert deaths and all(re.fullmatch(rf"warning: worker \S+:\d+ was killed by SIGKILL \(as the out-of-memory killer "
                                       rf"does\) while computing {HUNG}; the other workers go on", line)
                          or re.fullmatch(rf"worker \S+:\d+ was killed by SIGKILL \(as the out-of-memory killer does\) "
                                          rf"in cell {HUNG}: not recorded; run the same command again to resume it "
                                          "after its saved steps", line) for line in deaths), deaths
    assert "1 cells in " in text and "(1 finished)" in text and "; 1 computed by this run" in text


@pytest.mark.slow
def test_a_cell_that_timed_out_is_not_retried_by_the_other_workers(tmp_path):
    """Every cell hangs: each times out once (not once per worker), and the cells count as computed by the run."""
    out = tmp_path / "run"
    rc, text = finish_run(out, "cell:*:hang", "--cell-timeout", "5")
    assert rc == 1 and "Traceback" not in text, text
    timeouts = sorted(re.findall(r"^(?:warning: )?cell (\S+): timed out after 5 s in ", text, re.MULTILINE))
    assert timeouts == [HEALTHY, HUNG], text
    assert "2 cells in " in text and "(2 failed)" in text and "; 2 computed by this run" in text
    assert statuses(out) == {}  # failed cells are not recorded: the next run retries them


@pytest.mark.slow
def test_cells_computed_under_a_cell_timeout_count_as_computed_by_the_run(runner, tmp_path):
    signal, rc, log = runner.run(tmp_path / "run", "--cell-timeout", "600")
    assert (signal, rc) == (None, 0), log
    assert "1 cells in " in log and "(1 finished); results in " in log and "; 1 computed by this run" in log


def test_a_timeout_note_holds_for_its_run_only(tmp_path):
    from benchbackcompat.record import parse_record

    store = ResultStore(tmp_path)
    failed = parse_record({"key": "a" * 16, "label": "s/m/seed0", "scenario": "s", "kind": "ext-class", "method": "m",
                           "seed": 0, "status": "failed", "reason": "timed out after 5 s in step 0 of 2 (--cell-timeout)"})
    assert store.timed_out_in("a" * 16, "run-1") is None
    store.note_timeout("a" * 16, "run-1", failed)
    assert store.timed_out_in("a" * 16, "run-1") == failed
    assert store.timed_out_in("a" * 16, "run-2") is None  # a later run retries the cell
    (store.cell_dir("a" * 16) / "timed-out.json").write_bytes(b"\xff")  # damaged: as if there were none
    assert store.timed_out_in("a" * 16, "run-1") is None


def fixture_results(tmp_path: Path, name: str, drop: str = "", presets: dict[str, str] | None = None) -> Path:
    """A results folder of the fixture's records, without scenario ``drop``, scenario -> preset moved by ``presets``."""
    store = ResultStore(tmp_path / name)
    for record in json.loads((Path(__file__).parent / "fixtures" / "leaderboard_records.json").read_text()):
        if record["scenario"] != drop:
            store.write_record(record["key"], {**record, "preset": (presets or {}).get(record["scenario"], record["preset"])})
    return tmp_path / name


def test_a_rendering_with_fewer_pages_removes_the_earlier_pages_and_nothing_it_did_not_write(tmp_path):
    from benchbackcompat.cli import main

    two = fixture_results(tmp_path, "two", presets={"multi-step": "cpu"})  # two pages: embedded-quick, embedded-cpu
    one = fixture_results(tmp_path, "one", drop="multi-step")
    board = tmp_path / "board"
    assert main(["leaderboard", "--results", str(two), "--out", str(board)]) == 0
    assert (board / "embedded-cpu.md").is_file() and (board / "embedded-quick.md").is_file()
    (board / "NOTES.md").write_text("not the renderer's")
    (board / "figures" / "drawn-by-hand.md").write_text("not the renderer's either")
    assert main(["leaderboard", "--results", str(one), "--out", str(board)]) == 0
    fresh = tmp_path / "fresh"
    assert main(["leaderboard", "--results", str(one), "--out", str(fresh)]) == 0
    assert set(leaderboard_files(board)) == set(leaderboard_files(fresh)) | {"NOTES.md", "figures/drawn-by-hand.md"}
    links_resolve(board)


def test_rendering_into_a_mount_point_whose_parent_is_read_only(tmp_path, monkeypatch):
    """``board`` is its own file system (a rename across its boundary fails as the kernel's does) in a read-only
    folder (no new folder beside it): the rendering still lands, and nothing is written outside ``board``."""
    from benchbackcompat.cli import main

    results = fixture_results(tmp_path, "results")
    board = tmp_path / "mounted" / "board"
    board.mkdir(parents=True)
    mkdir, replace, rename = os.mkdir, os.replace, os.rename

    def inside(path) -> bool:
        return Path(os.path.abspath(path)).is_relative_to(board)

    def guarded_mkdir(path, *args, **kwargs):
        if not inside(path) and Path(os.path.abspath(path)).is_relative_to(board.parent):
            raise OSError(errno.EPERM, os.strerror(errno.EPERM), str(path))
        return mkdir(path, *args, **kwargs)

    def across(move):
        def guarded(src, dst, *args, **kwargs):
            if inside(src) != inside(dst):
                raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), str(src), None, str(dst))
            return move(src, dst, *args, **kwargs)
        return guarded

    monkeypatch.setattr(os, "mkdir", guarded_mkdir)
    monkeypatch.setattr(os, "replace", across(replace))
    monkeypatch.setattr(os, "rename", across(rename))
    assert main(["leaderboard", "--results", str(results), "--out", str(board)]) == 0
    monkeypatch.undo()
    assert (board / "README.md").is_file() and (board / "embedded-quick.md").is_file()
    assert [p.name for p in board.parent.iterdir()] == ["board"]
    links_resolve(board)


@pytest.mark.parametrize("file", ["*.png", "README.md"])
def test_a_full_disk_while_rendering_names_the_file_in_one_line_and_keeps_the_old_rendering(file, tmp_path, capsys):
    from benchbackcompat.cli import main

    results = fixture_results(tmp_path, "results")
    board = tmp_path / "board"
    assert main(["leaderboard", "--results", str(results), "--out", str(board)]) == 0
    before = leaderboard_files(board)
    capsys.readouterr()
    faults.configure(f"write:{file}:full")
    try:
        assert main(["leaderboard", "--results", str(results), "--out", str(board)]) == 2
    finally:
        faults.configure(None)
    (line,) = capsys.readouterr().err.strip().splitlines()
    published = rf"{re.escape(str(board))}/{'figures/[^/ ]+[.]png' if file == '*.png' else 'README[.]md'}"
    assert re.fullmatch(rf"error: cannot access {published}: No space left on device; check the path, its permissions "
                        "and the free space", line), line
    assert leaderboard_files(board) == before and not list(board.glob(".rendering-*"))


def test_a_rendering_killed_at_its_last_swap_leaves_no_page_the_next_one_does_not_know_it_wrote(tmp_path):
    """Killed as it moves the index in, a rendering has already moved in a page the old index does not list; the next
    rendering, which has no such page, removes it with its figures instead of leaving it linking deleted figures."""
    from benchbackcompat.cli import main

    one = fixture_results(tmp_path, "one", drop="multi-step")  # one page: embedded-quick
    two = fixture_results(tmp_path, "two", presets={"multi-step": "cpu"})  # and embedded-cpu
    board = tmp_path / "board"
    assert main(["leaderboard", "--results", str(one), "--out", str(board)]) == 0
    env = {**os.environ, faults.ENV: "swap:README.md:kill"}
    argv = [sys.executable, "-m", "benchbackcompat", "leaderboard", "--results", str(two), "--out", str(board)]
    assert subprocess.run(argv, env=env, capture_output=True, text=True).returncode == -9
    assert (board / "embedded-cpu.md").is_file() and "embedded-cpu" not in (board / "README.md").read_text()
    assert main(["leaderboard", "--results", str(one), "--out", str(board)]) == 0
    links_resolve(board)
    fresh = tmp_path / "fresh"
    assert main(["leaderboard", "--results", str(one), "--out", str(fresh)]) == 0
    assert set(leaderboard_files(board)) == set(leaderboard_files(fresh))
