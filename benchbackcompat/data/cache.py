"""On-disk cache of decoded datasets: one torch file of uint8 arrays per request key, with its SHA-256 beside it.

A cache file that is missing its checksum, does not match it, or cannot be loaded (flipped or
random bytes, a torn write) is rebuilt from the source with one warning line.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from benchbackcompat.data.arrays import DatasetBundle, ImageArrays
from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.logs import log

FORMAT_VERSION = 2  # 2: a .sha256 checksum beside each file


def cache_path(cache_dir: Path, name: str, key: dict[str, Any]) -> Path:
    """The cache file of dataset `name` for the content-defining `key` (JSON-serialisable)."""
    text = json.dumps({"format": FORMAT_VERSION, "name": name, **key}, sort_keys=True, default=str)
    return Path(cache_dir) / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.pt"


def file_fingerprint(path: Path) -> list[Any]:
    """Name, size and modification time of a source file (a change invalidates the cache)."""
    stat = path.stat()
    return [path.name, stat.st_size, stat.st_mtime_ns]


def checksum_file(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def save_bundle(path: Path, bundle: DatasetBundle) -> None:
    """Write atomically (temporary file, then rename), then its SHA-256 beside it: a crash never leaves a torn
    cache, and a cache without a matching checksum is rebuilt."""
    payload = {
        "name": bundle.name, "class_names": list(bundle.class_names),
        "mean": list(bundle.mean), "std": list(bundle.std),
        "splits": {k: {"images": v.images.cpu(), "labels": v.labels.cpu()} for k, v in bundle.splits.items()},
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    checksum_file(path).unlink(missing_ok=True)
    _write_atomic(path, data)
    _write_atomic(checksum_file(path), hashlib.sha256(data).hexdigest().encode())


def load_bundle(path: Path) -> DatasetBundle:
    """The bundle at ``path``; ValueError when it has no checksum or does not match it."""
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    try:
        recorded = checksum_file(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        raise ValueError("it has no checksum") from None
    if digest != recorded:
        raise ValueError("it does not match its checksum")
    payload = torch.load(path, map_location="cpu", weights_only=True)
    return DatasetBundle(
        name=payload["name"], class_names=list(payload["class_names"]),
        mean=tuple(payload["mean"]), std=tuple(payload["std"]),
        splits={k: ImageArrays(v["images"], v["labels"]) for k, v in payload["splits"].items()},
    )


def cached(cache_dir: Path, name: str, key: dict[str, Any], build: Callable[[], DatasetBundle]) -> DatasetBundle:
    """Load the bundle for (name, key) from `cache_dir`, or build it and store it there.
    A cache file that fails its checksum or cannot be loaded is rebuilt, with one warning line."""
    path = cache_path(cache_dir, name, key)
    if path.is_file():
        try:
            bundle = load_bundle(path)
            log.info(f"dataset {name}: cache hit {path}")
            return bundle
        except Exception as error:  # damaged bytes make torch.load raise many kinds of errors
            why = str(error) if isinstance(error, ValueError) and str(error).startswith("it ") else \
                f"it cannot be loaded ({type(error).__name__})"
            log.warning(f"dataset cache {path}: {why}; rebuilding it")
    log.info(f"dataset {name}: no cache yet, building {path}")
    bundle = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_bundle(path, bundle)
    except OSError as exc:
        raise BenchError(f"cannot write the dataset cache {path}: {exc.strerror or exc}; "
                         "pass a writable cache directory") from exc
    return bundle
