"""Wall-clock time of a cell's phases (training, shared models, feature extraction, scoring), and the items processed
per second by what a refresh of the gallery repeats (embedding per backbone, index building per index kind)."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch


class PhaseTimer:
    """Accumulates seconds per phase name; on CUDA it waits for queued kernels before reading the clock."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.seconds: dict[str, float] = {}

    def now(self) -> float:
        """The clock, in seconds, once the device's queued work is done."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = self.now()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + self.now() - started

    def get(self, name: str) -> float:
        return self.seconds.get(name, 0.0)


class Throughput:
    """Items and seconds per key (a backbone, an index kind), summed over what a cell measured: the throughput is
    items / seconds."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, float]] = {}

    def add(self, key: str, items: int, seconds: float, **fields: float) -> None:
        """Count ``items`` done in ``seconds`` under ``key`` (and any other ``fields``, summed alike)."""
        found = self.counts.setdefault(key, {"items": 0, "seconds": 0.0})
        for name, value in {"items": items, "seconds": seconds, **fields}.items():
            found[name] = found.get(name, 0) + value

    def to_dict(self) -> dict[str, dict[str, float]]:
        return {key: dict(found) for key, found in self.counts.items()}
