"""On-disk cache of decoded datasets: one torch file of uint8 arrays per request key."""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from benchbackcompat.data.arrays import DatasetBundle, ImageArrays
from benchbackcompat.errors import BenchError
from benchbackcompat.logs import log

FORMAT_VERSION = 1


def cache_path(cache_dir: Path, name: str, key: dict[str, Any]) -> Path:
    """The cache file of dataset `name` for the content-defining `key` (JSON-serialisable)."""
    text = json.dumps({"format": FORMAT_VERSION, "name": name, **key}, sort_keys=True, default=str)
    return Path(cache_dir) / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.pt"


def file_fingerprint(path: Path) -> list[Any]:
    """Name, size and modification time of a source file (a change invalidates the cache)."""
    stat = path.stat()
    return [path.name, stat.st_size, stat.st_mtime_ns]


def save_bundle(path: Path, bundle: DatasetBundle) -> None:
    """Write atomically (temporary file, then rename), so a crash never leaves a torn cache."""
    payload = {
        "name": bundle.name, "class_names": list(bundle.class_names),
        "mean": list(bundle.mean), "std": list(bundle.std),
        "splits": {k: {"images": v.images.cpu(), "labels": v.labels.cpu()} for k, v in bundle.splits.items()},
    }
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def load_bundle(path: Path) -> DatasetBundle:
    payload = torch.load(path, map_location="cpu", weights_only=True)
    return DatasetBundle(
        name=payload["name"], class_names=list(payload["class_names"]),
        mean=tuple(payload["mean"]), std=tuple(payload["std"]),
        splits={k: ImageArrays(v["images"], v["labels"]) for k, v in payload["splits"].items()},
    )


def cached(cache_dir: Path, name: str, key: dict[str, Any], build: Callable[[], DatasetBundle]) -> DatasetBundle:
    """Load the bundle for (name, key) from `cache_dir`, or build it and store it there.
    An unreadable cache file is rebuilt."""
    path = cache_path(cache_dir, name, key)
    if path.is_file():
        try:
            bundle = load_bundle(path)
            log.info(f"dataset {name}: cache hit {path}")
            return bundle
        except (OSError, RuntimeError, EOFError, KeyError, ValueError):
            log.warning(f"dataset cache {path} cannot be read; rebuilding it")
    log.info(f"dataset {name}: no cache yet, building {path}")
    bundle = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_bundle(path, bundle)
    except OSError as exc:
        raise BenchError(f"cannot write the dataset cache {path}: {exc.strerror or exc}; "
                         "pass a writable cache directory") from exc
    return bundle
