"""The features of a cell's T models for the compatibility matrix, in memory or spilled to disk.

Every model's query and gallery features are needed by T(T+1)/2 entries; held together they
grow with T (a 1023-d feature of 60k images is 245 MB, 7.6 GB for 31 models). Past a memory
budget the bank writes each model's features to a file and each matrix entry loads the two it
compares (memory-mapped), so evaluation memory stays at about two models' features whatever T.
The numbers are the same: the files hold the exact tensors.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

DEFAULT_BUDGET_BYTES = 1 << 30  # features held in memory up to 1 GiB, spilled past it


@dataclass
class ModelFeatures:
    query: Tensor
    gallery: Tensor | None  # None for leave-one-out

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.query, self.gallery) if t is not None)


class FeatureBank:
    """Features of models 0..T-1 in order; ``query(t)`` and ``stored(k)`` (the gallery, or the query set under
    leave-one-out) give model t's tensors, loaded from disk when spilled. ``directory=None`` never spills."""

    def __init__(self, directory: Path | None = None, budget_bytes: int = DEFAULT_BUDGET_BYTES,
                 device: torch.device | str = "cpu") -> None:
        self.directory, self.budget, self.device = directory, budget_bytes, torch.device(device)
        self.held: list[ModelFeatures | None] = []  # None: on disk
        self.held_bytes = 0

    @classmethod
    def in_memory(cls, features: list[ModelFeatures]) -> FeatureBank:
        bank = cls()
        for item in features:
            bank.append(item)
        return bank

    @property
    def spilled(self) -> bool:
        return any(item is None for item in self.held)

    def __len__(self) -> int:
        return len(self.held)

    def append(self, features: ModelFeatures) -> None:
        self.held.append(features)
        self.held_bytes += features.nbytes
        if self.directory is not None and self.held_bytes > self.budget:
            for index, item in enumerate(self.held):
                if item is not None:
                    self._write(index, item)
                    self.held[index] = None
            self.held_bytes = 0

    def query(self, index: int) -> Tensor:
        return self._get(index, "query")

    def stored(self, index: int) -> Tensor:
        """The gallery features of model ``index`` (its query features under leave-one-out)."""
        item = self.held[index]
        if item is not None:
            return item.gallery if item.gallery is not None else item.query
        return self._get(index, "stored")

    def close(self) -> None:
        """Delete the spilled files."""
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _path(self, index: int, name: str) -> Path:
        return self.directory / f"model-{index}-{name}.pt"

    def _write(self, index: int, item: ModelFeatures) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        torch.save(item.query.cpu(), self._path(index, "query"))
        if item.gallery is not None:
            torch.save(item.gallery.cpu(), self._path(index, "stored"))

    def _get(self, index: int, name: str) -> Tensor:
        item = self.held[index]
        if item is not None:
            return item.query
        path = self._path(index, name)
        if name == "stored" and not path.exists():  # leave-one-out: the query set is the gallery
            path = self._path(index, "query")
        return torch.load(path, map_location="cpu", mmap=True, weights_only=True).to(self.device)
