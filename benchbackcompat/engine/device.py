"""Device selection and mixed precision (seeds: :mod:`benchbackcompat.runtime.seeds`)."""
from __future__ import annotations

import contextlib
import functools

import torch

from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.cpuinfo import first_processor

DEVICE_TYPES = ("cpu", "cuda", "mps")


def availability() -> dict[str, bool]:
    """Whether each supported device type can be used in this process."""
    mps = getattr(torch.backends, "mps", None)
    return {"cuda": torch.cuda.is_available(), "mps": bool(mps and mps.is_available()), "cpu": True}


def availability_line() -> str:
    """``cuda: available (1 device), mps: not available, cpu: available``."""
    found = availability()
    cuda = f"available ({torch.cuda.device_count()} devices)" if found["cuda"] else "not available"
    return f"cuda: {cuda}, mps: {'available' if found['mps'] else 'not available'}, cpu: available"


def resolve_device(spec: str) -> torch.device:
    """``auto`` picks CUDA when available, else CPU; ``cuda``/``cuda:N``/``mps`` must be available (checked up
    front, one line naming what this machine has)."""
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise BenchError(f"--device {spec!r} is not a device; use auto, {', '.join(DEVICE_TYPES)} (or cuda:N)") from None
    if device.type not in DEVICE_TYPES:
        raise BenchError(f"--device {spec!r}: device type {device.type!r} is not supported; "
                         f"use auto, {', '.join(DEVICE_TYPES)} (or cuda:N)")
    if not availability()[device.type]:
        raise BenchError(f"--device {spec} was asked for but is not available here ({availability_line()}); "
                         "use --device auto or cpu")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise BenchError(f"--device {spec}: this machine has {torch.cuda.device_count()} CUDA devices "
                         f"(cuda:0 to cuda:{torch.cuda.device_count() - 1})")
    return device


@functools.cache
def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bf16 in hardware (AVX512-BF16 or AMX-BF16, read from /proc/cpuinfo on Linux).
    Elsewhere bf16 is emulated and slower than fp32, so ``amp = "auto"`` stays in fp32."""
    flags = first_processor().get("flags", "").split()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def uses_bf16(device: torch.device, mode: str) -> bool:
    """``bf16`` always; ``auto`` on CUDA and on CPUs with native bf16 (benchmarks/training.py on 2 AVX512-BF16
    cores, with channels-last: ResNet-18 trains 1.5x and convnet-m 2.9x as fast as in fp32); ``off`` never."""
    return mode == "bf16" or (mode == "auto" and (device.type == "cuda" or (device.type == "cpu" and cpu_has_native_bf16())))


def precision(device: torch.device, mode: str) -> str:
    """How ``mode`` trains on ``device``, for the record: ``bf16 autocast`` or ``fp32``."""
    return "bf16 autocast" if uses_bf16(device, mode) else "fp32"


def autocast(device: torch.device, mode: str) -> contextlib.AbstractContextManager:
    """bf16 autocast where :func:`uses_bf16`; full precision otherwise."""
    if uses_bf16(device, mode):
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
