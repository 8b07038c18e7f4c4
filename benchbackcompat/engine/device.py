"""Device selection and mixed precision (seeds: :mod:`benchbackcompat.runtime.seeds`)."""
from __future__ import annotations

import contextlib

import torch

from benchbackcompat.errors import BenchError

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


def uses_bf16(mode: str) -> bool:
    """Whether ``mode`` trains under bf16 autocast: ``bf16`` does. ``off`` and an ``auto`` that was not resolved for
    its workload (code training outside a cell; a cell resolves it by measurement, ``engine.precision``) train in
    fp32, the exact default."""
    return mode == "bf16"


def precision(mode: str) -> str:
    """How ``mode`` trains, for the record: ``bf16 autocast`` or ``fp32``."""
    return "bf16 autocast" if uses_bf16(mode) else "fp32"


def autocast(device: torch.device, mode: str) -> contextlib.AbstractContextManager:
    """bf16 autocast where :func:`uses_bf16`; full precision otherwise."""
    if uses_bf16(mode):
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
