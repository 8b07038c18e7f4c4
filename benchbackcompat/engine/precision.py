"""``amp = "auto"``: bf16 autocast where it is measured faster than fp32 for the backbone at hand, fp32 elsewhere.

A CPU flag (AVX512-BF16) says what the processor *can* do, not what is fast: on 2 Zen 4 cores bf16 autocast trains
the quick preset's convnets 1.3-1.5x as fast as fp32 and ResNet-18 at 32x32 1.1x, on 2 cores of an Intel Xeon with the
same flag and no AMX it was reported 0.56x as fast, and with other jobs on the same cores bf16 loses more than fp32
(0.5x on the Zen 4 cores). So the first cell that trains a backbone under ``auto`` times a few forward and backward passes of that backbone
(at the cell's image size and batch size) in fp32 and in bf16, interleaved, and keeps bf16 only when its median step
is at least :data:`MARGIN` faster; the choice is cached per processor, thread count, torch version and workload in the
user cache (``precision.json``), so every later cell on the machine trains the same way without measuring again (the
same seed gives the same numbers). A measurement during which the process's threads got less than :data:`BUSY` of the
cores (other jobs running) is cached all the same, with a warning naming the file to delete to time it again.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from filelock import FileLock

from benchbackcompat.errors import BenchError
from benchbackcompat.models.network import build_network
from benchbackcompat.runtime.cpuinfo import processor_model
from benchbackcompat.runtime.logs import log

MARGIN = 1.05  # bf16 must take at most 1/1.05 of fp32's step time: a smaller gain is within run-to-run noise
ROUNDS = 7  # interleaved timings per precision (after two warm-up steps each); the fastest counts
MIN_TIMED_SECONDS = 0.1  # steps per timing are repeated until one timing lasts at least this long
MAX_BATCH = 64  # the timed batch: the cell's, capped so that a measurement takes seconds
BUSY = 0.75  # a CPU measurement whose threads got less than this share of the cores ran beside other jobs: said so
CACHE_VERSION = 1
_measured: dict[str, "Measurement"] = {}  # what this process measured or read, per machine and workload


@dataclass(frozen=True)
class Workload:
    """What one training step of a cell computes, as far as its speed goes."""

    backbone: str
    image_size: int
    batch_size: int
    in_chans: int = 3
    channels_last: bool = False
    input_size: int | None = None

    @property
    def timed_batch(self) -> int:
        return max(2, min(self.batch_size, MAX_BATCH))

    def label(self) -> str:
        size = f"{self.image_size}px" + (f" resized to {self.input_size}" if self.input_size else "")
        return f"{self.backbone} at {size}, batch {self.timed_batch}{', channels-last' if self.channels_last else ''}"


@dataclass(frozen=True)
class Measurement:
    """Images per second of one training step of a workload in each precision, and the choice made from them."""

    fp32: float
    bf16: float
    cpu_share: float = 1.0  # CPU time / (wall time x threads) while timing on a CPU: below BUSY, other jobs competed

    @property
    def quiet(self) -> bool:
        return self.cpu_share >= BUSY

    @property
    def amp(self) -> str:
        """``bf16`` when bf16 is faster by at least :data:`MARGIN`, else ``off`` (fp32)."""
        return "bf16" if self.bf16 >= self.fp32 * MARGIN else "off"

    def describe(self) -> str:
        return f"fp32 {self.fp32:.1f} img/s, bf16 {self.bf16:.1f} img/s ({self.bf16 / self.fp32:.2f}x)"


def machine(device: torch.device) -> str:
    """What a measurement holds for: the processor (or GPU), the instruction set torch's kernels use, the threads and
    the torch build."""
    if device.type == "cuda":
        where = f"cuda {torch.cuda.get_device_name(device)}"
    else:  # the kernels torch and oneDNN may use (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA can hold them back)
        isa = torch.backends.cpu.get_cpu_capability()
        limit = os.environ.get("ONEDNN_MAX_CPU_ISA")
        where = (f"{device.type} {processor_model()}, {isa}{f' (oneDNN up to {limit})' if limit else ''}, "
                 f"{torch.get_num_threads()} threads")
    return f"{where}, torch {torch.__version__}"


def measure(workload: Workload, device: torch.device) -> Measurement:
    """Times training steps of ``workload`` (random images, a linear head, cross-entropy, SGD with momentum) in fp32
    and under bf16 autocast, interleaved, and returns the best rate of each. The global random state is left as found."""
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(0)
        model = build_network(workload.backbone, num_classes=10, image_size=workload.image_size,
                              in_chans=workload.in_chans, input_size=workload.input_size).to(device)
        images = torch.randn(workload.timed_batch, workload.in_chans, workload.image_size, workload.image_size,
                             device=device)
        if workload.channels_last:
            model = model.to(memory_format=torch.channels_last)
            images = images.contiguous(memory_format=torch.channels_last)
        labels = torch.arange(workload.timed_batch, device=device) % 10
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        model.train()

        def step(bf16: bool) -> None:
            context = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
            with context:
                loss = F.cross_entropy(model(images).logits.float(), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        def seconds(bf16: bool, repeats: int) -> float:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            started = time.perf_counter()
            for _ in range(repeats):
                step(bf16)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            return (time.perf_counter() - started) / repeats

        warm = [seconds(bf16, 1) for bf16 in (False, True, False, True)][2:]  # primitive creation, caches
        repeats = max(1, math.ceil(MIN_TIMED_SECONDS / max(min(warm), 1e-6)))
        timings: dict[bool, list[float]] = {False: [], True: []}
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(ROUNDS):
            for bf16 in (False, True):
                timings[bf16].append(seconds(bf16, repeats))
        share = (time.process_time() - cpu) / ((time.perf_counter() - wall) * torch.get_num_threads())
    # the fastest timing of each: other work on the machine only ever adds time
    rate = {bf16: workload.timed_batch / min(t) for bf16, t in timings.items()}
    return Measurement(fp32=rate[False], bf16=rate[True], cpu_share=1.0 if device.type == "cuda" else min(share, 1.0))


@dataclass
class AutoPrecision:
    """Resolves ``amp`` for a workload: ``bf16`` and ``off`` as given; ``auto`` by measurement, cached in ``cache``
    (a JSON file; None: measured in every process). MPS and other devices stay in fp32."""

    cache: Path | None = field(default_factory=lambda: Path.home() / ".cache" / "benchbackcompat" / "precision.json")

    def resolve(self, mode: str, device: torch.device, workload: Workload) -> str:
        if mode != "auto":
            return mode
        if device.type not in ("cpu", "cuda"):
            return "off"
        try:
            return self.measurement(device, workload).amp
        except BenchError as error:  # a backbone this module cannot build (a model zoo's): evaluated in fp32
            log.debug(f"amp auto: fp32 for {workload.backbone} (no training step of it can be timed: {error})")
            return "off"

    def measurement(self, device: torch.device, workload: Workload) -> Measurement:
        """The workload's rates on this machine: from this process, the cache, or measured now (and cached)."""
        key = f"{machine(device)} | {workload.label()}"
        if key in _measured:  # one line per workload and process, not per cell
            return _measured[key]
        with self._locked():  # one process measures while the others wait (their training would disturb it)
            choices = self._read()
            stored = choices.get(key)
            found = Measurement(stored["fp32"], stored["bf16"]) if _valid(stored) else None
            if found is None:
                found = measure(workload, device)
                self._write(choices, key, found)
                where = f"cached in {self.cache}" if self.cache is not None else "not cached"
                if not found.quiet:  # cached all the same: every process on the machine must train alike
                    log.warning(f"amp auto: other jobs shared the cores while {workload.label()} was timed (its threads "
                                f"ran {100 * found.cpu_share:.0f}% of the time); delete {self.cache} to time it again "
                                "on quiet cores")
                log.info(f"amp auto: {'bf16 autocast' if found.amp == 'bf16' else 'fp32'} for {workload.label()} on "
                         f"{machine(device)}: measured {found.describe()}; {where}")
            else:
                log.info(f"amp auto: {'bf16 autocast' if found.amp == 'bf16' else 'fp32'} for {workload.label()} "
                         f"(measured earlier on this machine: {found.describe()}; {self.cache})")
        _measured[key] = found
        return found

    def _locked(self) -> contextlib.AbstractContextManager:
        if self.cache is None:
            return contextlib.nullcontext()
        try:
            self.cache.parent.mkdir(parents=True, exist_ok=True)
            return FileLock(str(self.cache) + ".lock", timeout=600)
        except OSError:
            return contextlib.nullcontext()

    def _read(self) -> dict[str, Any]:
        if self.cache is None:
            return {}
        try:
            content = json.loads(self.cache.read_text())
        except (OSError, ValueError, RecursionError):
            return {}  # absent or damaged: measured again and rewritten
        if not isinstance(content, dict) or content.get("version") != CACHE_VERSION:
            return {}
        choices = content.get("choices")
        return choices if isinstance(choices, dict) else {}

    def _write(self, choices: dict[str, Any], key: str, found: Measurement) -> None:
        """``choices`` (as read under the lock) with ``found`` for ``key``, written atomically."""
        if self.cache is None:
            return
        choices[key] = {"fp32": found.fp32, "bf16": found.bf16, "amp": found.amp, "cpu_share": round(found.cpu_share, 3),
                        "measured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
        temporary = self.cache.with_name(f"{self.cache.name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(json.dumps({"version": CACHE_VERSION, "choices": choices}, indent=1, sort_keys=True))
            os.replace(temporary, self.cache)
        except OSError as error:  # a read-only cache: the choice holds for this process only
            log.warning(f"amp auto: cannot write {self.cache} ({error.strerror or error}); measuring again next time")
            temporary.unlink(missing_ok=True)


def _valid(stored: object) -> bool:
    return (isinstance(stored, dict) and all(isinstance(stored.get(k), (int, float)) and not isinstance(stored.get(k), bool)
                                             and math.isfinite(stored[k]) and stored[k] > 0 for k in ("fp32", "bf16")))
