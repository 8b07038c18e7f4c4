"""Checkpoints: written atomically with a checksum, loaded with ``weights_only=True``."""
from __future__ import annotations

import hashlib
import io
import os
import pickle
from pathlib import Path
from typing import Any

import torch

from benchbackcompat.errors import BenchError


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def save_checkpoint(path: Path, payload: dict[str, Any]) -> str:
    """Save tensors, numbers, strings, lists and dicts only; returns the SHA-256 of the file."""
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    atomic_write_bytes(path, data)
    digest = hashlib.sha256(data).hexdigest()
    atomic_write_bytes(path.with_suffix(path.suffix + ".sha256"), digest.encode())
    return digest


def load_checkpoint(path: Path, map_location: torch.device | str = "cpu") -> dict[str, Any] | None:
    """Load a checkpoint if it exists and matches its recorded checksum; None when it must be recomputed."""
    checksum = path.with_suffix(path.suffix + ".sha256")
    if not path.is_file() or not checksum.is_file():
        return None
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != checksum.read_text().strip():
        return None
    try:
        return torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        raise BenchError(
            f"checkpoint {path} needs arbitrary unpickling, which is refused for safety ({error}); delete it to retrain"
        ) from None
