"""Device selection, seeds and mixed precision."""
from __future__ import annotations

import contextlib
import hashlib
import random

import numpy as np
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


def derive_seed(seed: int, *keys: object) -> int:
    """A 63-bit seed derived from ``seed`` and ``keys`` (stable across processes, unlike ``hash``)."""
    text = ":".join(str(k) for k in (seed, *keys))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") & (2**63 - 1)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def autocast(device: torch.device, mode: str) -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA for ``auto``/``bf16``; full precision otherwise."""
    if device.type == "cuda" and mode in ("auto", "bf16"):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    if mode == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
