"""Device selection and mixed precision (seeds: :mod:`benchbackcompat.seeds`)."""
from __future__ import annotations

import contextlib

import torch

from benchbackcompat.errors import BenchError


def resolve_device(spec: str) -> torch.device:
    """``auto`` picks CUDA when available, else CPU; ``cuda`` without a GPU is an error."""
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise BenchError(f"--device {spec!r} is not a device; use auto, cpu or cuda") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BenchError("--device cuda was asked for but no CUDA GPU is available; use --device auto or cpu")
    return device


def autocast(device: torch.device, mode: str) -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA for ``auto``/``bf16``; full precision otherwise."""
    if device.type == "cuda" and mode in ("auto", "bf16"):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    if mode == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
