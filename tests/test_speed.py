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


def test_auto_precision_keeps_bf16_only_where_it_is_measured_faster_by_the_margin():
    from benchbackcompat.engine.precision import MARGIN, Measurement

    assert MARGIN == 1.05
    assert Measurement(fp32=100.0, bf16=106.0).amp == "bf16"  # 6 % faster
    assert Measurement(fp32=100.0, bf16=104.0).amp == "off"  # 4 %: within noise, fp32 stays
    assert Measurement(fp32=12.6, bf16=7.1).amp == "off"  # the Xeon without AMX: bf16 0.56x as fast


def test_auto_precision_measures_once_per_workload_caches_the_choice_and_forced_modes_never_measure(tmp_path,
                                                                                                   monkeypatch):
    import json

    import torch

    from benchbackcompat.engine import precision as module

    calls = []

    def fake_measure(workload, device):
        calls.append(workload.backbone)
        return module.Measurement(fp32=100.0, bf16=60.0 if workload.backbone == "slow-bf16" else 150.0)

    monkeypatch.setattr(module, "measure", fake_measure)
    monkeypatch.setattr(module, "_measured", {})
    cpu, cache = torch.device("cpu"), tmp_path / "precision.json"
    slow, fast = module.Workload("slow-bf16", 16, 32), module.Workload("fast-bf16", 16, 32)
    chooser = module.AutoPrecision(cache)
    assert chooser.resolve("bf16", cpu, slow) == "bf16" and chooser.resolve("off", cpu, fast) == "off" and calls == []
    assert chooser.resolve("auto", torch.device("mps"), fast) == "off" and calls == []
    assert chooser.resolve("auto", cpu, slow) == "off" and chooser.resolve("auto", cpu, fast) == "bf16"
    assert chooser.resolve("auto", cpu, fast) == "bf16" and calls == ["slow-bf16", "fast-bf16"]
    stored = json.loads(cache.read_text())["choices"]
    assert sorted(v["amp"] for v in stored.values()) == ["bf16", "off"]
    assert all(module.machine(cpu) in key for key in stored)
    module._measured.clear()  # another process: reads the cache
    assert module.AutoPrecision(cache).resolve("auto", cpu, slow) == "off" and len(calls) == 2
    module._measured.clear()
    cache.write_text("{not json")  # damaged: measured again and rewritten
    assert module.AutoPrecision(cache).resolve("auto", cpu, fast) == "bf16" and len(calls) == 3
    assert json.loads(cache.read_text())["version"] == module.CACHE_VERSION


def test_a_measurement_holds_for_the_instruction_set_torch_uses(monkeypatch):
    """A cached choice is not reused when the kernels are held back (ATEN_CPU_CAPABILITY=avx2 on an AVX-512 core
    emulates bf16: there it timed 0.12x fp32, where the AVX-512 kernels timed 1.3x)."""
    import torch

    from benchbackcompat.engine import precision as module

    cpu = torch.device("cpu")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    wide = module.machine(cpu)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    narrow = module.machine(cpu)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert len({wide, narrow, module.machine(cpu)}) == 3
    assert ", AVX512, " in wide and ", AVX2, " in narrow and "(oneDNN up to AVX2)" in module.machine(cpu)


def test_a_measurement_on_busy_cores_is_cached_all_the_same_and_says_so(tmp_path, monkeypatch, caplog):
    """Every process on the machine must train alike (the same seed, the same numbers), so a measurement made beside
    other jobs is kept too, with a warning naming the file to delete."""
    import json

    import torch

    from benchbackcompat.engine import precision as module

    monkeypatch.setattr(module, "measure", lambda workload, device: module.Measurement(100.0, 150.0, cpu_share=0.4))
    monkeypatch.setattr(module, "_measured", {})
    cache = tmp_path / "precision.json"
    assert module.AutoPrecision(cache).resolve("auto", torch.device("cpu"), module.Workload("convnet-s", 16, 32)) == "bf16"
    assert [v["cpu_share"] for v in json.loads(cache.read_text())["choices"].values()] == [0.4]
    assert f"ran 40% of the time); delete {cache}" in caplog.text


def test_the_measurement_times_both_precisions_and_leaves_the_random_state_as_found():
    import torch

    from benchbackcompat.engine.precision import Workload, measure

    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    found = measure(Workload("convnet-s", 8, 4), torch.device("cpu"))
    assert torch.equal(torch.rand(3), expected)
    assert found.fp32 > 0 and found.bf16 > 0 and found.amp in ("bf16", "off") and 0 < found.cpu_share <= 1


@pytest.mark.parametrize("amp", ["bf16", "off"])
def test_a_cell_trains_in_the_precision_auto_chose_and_its_record_says_so(tmp_path, monkeypatch, amp):
    from benchbackcompat.engine import device as device_module
    from benchbackcompat.engine import precision as module

    monkeypatch.setattr(module, "measure", lambda workload, device: module.Measurement(
        fp32=100.0, bf16=200.0 if amp == "bf16" else 50.0))
    monkeypatch.setattr(module, "_measured", {})
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # a private precision cache
    entered = []
    real = device_module.autocast

    def spy(device, mode):
        entered.append(mode)
        return real(device, mode)

    monkeypatch.setattr("benchbackcompat.engine.train.autocast", spy)
    assert main(["run", "--out", str(tmp_path / "r"), *TINY, "--scenario", "ext-class", "--methods", "l2"]) == 0
    (record,) = ResultStore(tmp_path / "r").records()
    assert record.device.endswith("; bf16 autocast" if amp == "bf16" else "; fp32")
    assert set(entered) == {amp}  # every training batch, in the chosen precision


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
