"""Speed plumbing: per-phase timings in records, ``--workers`` (no timing assertions: the machine is shared)."""
from __future__ import annotations

import platform

import pytest

from benchbackcompat.cli import main
from benchbackcompat.store import ResultStore
from benchbackcompat.testing.scenarios import tiny_run_args
from benchbackcompat.execution.workers import threads_per_worker

pytestmark = pytest.mark.slow

TINY = tiny_run_args(epochs=1)


def test_records_time_training_shared_models_extraction_and_scoring_apart(tmp_path):
    assert main(["run", "--out", str(tmp_path), *TINY, "--scenario", "both", "--methods", "l2,independent"]) == 0
    records = {r.method: r for r in ResultStore(tmp_path).records()}
    first, second = records["l2"].timings, records["independent"].timings
    # l2 runs first: it trains the standard old model (its step 0, whose self-test P_com divides by) and the new
    # reference; independent's two steps are those standard models: it loads all of them
    assert first["shared_trained"] == ["standard-0", "reference-1"]
    assert set(first["shared_s"]) == {"standard-0", "reference-1"}
    assert second["shared_trained"] == [] and set(second["shared_s"]) == {"standard-0", "standard-1", "reference-1"}
    for timings in (first, second):
        assert len(timings["steps_s"]) == 2
        assert timings["eval_s"] == pytest.approx(timings["extract_s"] + timings["score_s"])
        assert timings["train_s"] == pytest.approx(sum(timings["steps_s"]) + sum(timings["shared_s"].values()))
        assert timings["total_s"] >= timings["train_s"] + timings["eval_s"] - 1e-6
        assert min(timings["extract_s"], timings["score_s"]) > 0


def test_workers_run_cells_in_processes_with_the_same_numbers(tmp_path, capsys):
    """Two worker processes with one thread each give the numbers of one process with one thread (the thread
    count itself may change bf16 rounding, so the single process is held to one thread too), and the summary
    counts the cells the workers computed as computed by the run."""
    import torch

    args = [*TINY, "--scenario", "ext-class", "--methods", "independent,l2"]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert main(["run", "--out", str(tmp_path / "one"), *args, "--workers", "1"]) == 0
    finally:
        torch.set_num_threads(threads)
    capsys.readouterr()
    assert main(["run", "--out", str(tmp_path / "two"), *args, "--workers", "2"]) == 0
    assert "(2 finished); results in" in (err := capsys.readouterr().err) and "; 2 computed by this run" in err
    one = {r.method: r for r in ResultStore(tmp_path / "one").records()}
    two = {r.method: r for r in ResultStore(tmp_path / "two").records()}
    assert set(two) == {"independent", "l2"} and all(r.status == "finished" for r in two.values())
    for method in one:
        assert two[method].matrices == one[method].matrices


def test_workers_split_the_threads():
    assert threads_per_worker(2, threads=2) == 1
    assert threads_per_worker(3, threads=8) == 2
    assert threads_per_worker(4, threads=2) == 1


def test_workers_must_be_positive(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:  # refused by the parser, in one line, even with --dry-run
        main(["run", "--out", str(tmp_path), *TINY, "--scenario", "ext-class", "--methods", "l2", "--workers", "0", "--dry-run"])
    assert exit.value.code == 2 and "argument --workers: '0': expected a positive integer" in capsys.readouterr().err


@pytest.mark.parametrize("native", [True, False])
def test_auto_precision_is_bf16_on_cuda_and_on_cpus_with_native_bf16(monkeypatch, native):
    import torch

    from benchbackcompat.engine import device as device_module
    from benchbackcompat.engine.train import Acceleration

    monkeypatch.setattr(device_module, "cpu_has_native_bf16", lambda: native)
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert device_module.uses_bf16(cpu, "auto") is native
    assert device_module.uses_bf16(cuda, "auto") and device_module.uses_bf16(cpu, "bf16")
    assert not device_module.uses_bf16(cpu, "off") and not device_module.uses_bf16(cuda, "off")
    assert device_module.precision(cpu, "auto") == ("bf16 autocast" if native else "fp32")
    with device_module.autocast(cpu, "auto"):
        product = torch.ones(2, 2) @ torch.ones(2, 2)
    assert product.dtype == (torch.bfloat16 if native else torch.float32)
    assert Acceleration.resolve("auto", False, cpu).channels_last and not Acceleration.resolve("off", False, cpu).channels_last


def test_native_bf16_is_read_from_the_cpu_flags(monkeypatch, tmp_path):
    from benchbackcompat.engine import device as device_module
    from benchbackcompat.runtime import cpuinfo as cpuinfo_module

    flags = {"avx512_bf16": True, "amx_bf16": True, "avx512f": False}
    monkeypatch.setattr(cpuinfo_module.platform, "system", lambda: "Linux")
    for flag, expected in flags.items():
        cpuinfo = tmp_path / f"cpuinfo-{flag}"
        cpuinfo.write_text(f"processor\t: 0\nflags\t\t: fpu sse2 {flag} avx2\n\nprocessor\t: 1\nflags\t\t: fpu\n")
        monkeypatch.setattr(cpuinfo_module, "CPUINFO", cpuinfo)
        device_module.cpu_has_native_bf16.cache_clear()
        assert device_module.cpu_has_native_bf16() is expected
    device_module.cpu_has_native_bf16.cache_clear()


def test_a_cpu_record_names_its_threads_instruction_set_and_processor(monkeypatch, tmp_path):
    """fp32 rounds differently under AVX2 and AVX-512 kernels, and on other processors with the same instruction
    set, so the device string says which ran."""
    import torch

    from benchbackcompat.runtime import cpuinfo as cpuinfo_module
    from benchbackcompat.store.provenance import device_name

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
                       "model name\t: AMD EPYC 9R14 96-Core Processor\n\nprocessor\t: 1\nmodel\t\t: 99\n")
    monkeypatch.setattr(cpuinfo_module, "CPUINFO", cpuinfo)
    monkeypatch.setattr(cpuinfo_module.platform, "system", lambda: "Linux")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        name = device_name(torch.device("cpu"))
    finally:
        torch.set_num_threads(threads)
    assert name == f"cpu (1 threads, {platform.machine()}, AVX2, AMD EPYC 9R14 96-Core Processor (family 25, model 17))"
