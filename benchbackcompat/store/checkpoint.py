"""Checkpoints: written atomically with a checksum, loaded with ``weights_only=True``.

A checkpoint whose bytes do not match the SHA-256 recorded when it was written (truncated,
corrupted, or cut off between the file and its checksum by a kill) is reported and treated as
missing, so its step is recomputed; one that needs arbitrary unpickling is refused.
"""
from __future__ import annotations

import hashlib
import io
import logging
import os
import pickle
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbackcompat.runtime.faults import fault_point
from benchbackcompat.errors import BenchError

if TYPE_CHECKING:
    import torch

log = logging.getLogger("benchbackcompat")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old file or the new one. A write that fails (a
    full disk, a read-only folder) removes its partial file and raises OSError naming ``path``: the error of a
    write or a flush names no file by itself. Nothing is written through a link: the temporary file is created
    anew (a link planted under its name is removed, not followed) and renamed over ``path``, which replaces a link
    there rather than writing into its target."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(_create_new(tmp), "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        fault_point(f"write:{path.name}")
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error


def _create_new(path: Path) -> int:
    """A descriptor of a new, empty file at ``path``; whatever lay there (a killed writer's file, a planted link) is
    removed first, never opened."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags, 0o644)
    except FileExistsError:
        path.unlink()
        return os.open(path, flags, 0o644)


def checksum_path(path: Path) -> Path:
    return path.with_suffix(path.suffix + ".sha256")


def save_checkpoint(path: Path, payload: dict[str, Any]) -> str:
    """Save tensors, numbers, strings, lists and dicts only; returns the SHA-256 of the file.

    The checksum is written after the file, so a kill in between leaves a file without a
    matching checksum, which :func:`load_checkpoint` recomputes.
    """
    import torch  # imported when a checkpoint is written or read: reading records needs no torch

    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    checksum_path(path).unlink(missing_ok=True)
    atomic_write_bytes(path, data)
    atomic_write_bytes(checksum_path(path), digest.encode())
    return digest


def load_checkpoint(path: Path, map_location: torch.device | str = "cpu") -> dict[str, Any] | None:
    """The checkpoint at ``path`` if it exists and matches its recorded checksum; None (reported
    when the file exists) when it must be recomputed. Raises BenchError for an unsafe checkpoint."""
    if not path.is_file():
        return None
    checksum = checksum_path(path)
    if not checksum.is_file():
        log.warning(f"checkpoint {path} has no checksum (its write was interrupted); recomputing it")
        return None
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != checksum.read_text(errors="replace").strip():
        log.warning(f"checkpoint {path} does not match its checksum (truncated or corrupted); recomputing it")
        return None
    try:
        import torch

        payload = torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        unsafe = re.search(r"GLOBAL ([\w.]+)", str(error))
        if unsafe is None:
            log.warning(f"checkpoint {path} cannot be read (not a torch checkpoint); recomputing it")
            return None
        raise BenchError(
            f"checkpoint {path} needs arbitrary unpickling (it references {unsafe.group(1)}), which is refused because "
            "loading it could run any code; delete it to recompute, or re-save it with tensors, numbers and strings only"
        ) from None
    except Exception as error:  # damaged bytes make torch.load raise many kinds of errors
        log.warning(f"checkpoint {path} cannot be read ({type(error).__name__}); recomputing it")
        return None
    if not isinstance(payload, dict):
        log.warning(f"checkpoint {path} holds a {type(payload).__name__}, not a dict; recomputing it")
        return None
    return payload
