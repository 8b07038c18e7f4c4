"""Wall-clock time of a cell's phases (training, shared models, feature extraction, scoring)."""
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

    def _now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = self._now()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + self._now() - started

    def get(self, name: str) -> float:
        return self.seconds.get(name, 0.0)
