"""Decoded image arrays (uint8, channels first) and the bundle of splits a dataset provides."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class ImageArrays:
    """Images (uint8, N x C x H x W, contiguous) with their int64 labels."""

    images: Tensor
    labels: Tensor

    def __post_init__(self) -> None:
        if self.images.dtype != torch.uint8 or self.images.dim() != 4:
            raise ValueError(f"images must be uint8 N x C x H x W, got {self.images.dtype} {tuple(self.images.shape)}")
        if self.labels.shape != (self.images.shape[0],):
            raise ValueError(f"labels must have shape ({self.images.shape[0]},), got {tuple(self.labels.shape)}")
        self.images = self.images.contiguous()
        self.labels = self.labels.to(torch.int64)

    def subset(self, index: Tensor) -> ImageArrays:
        """The images at `index` (integer indices or a boolean mask)."""
        index = index.to(self.images.device)
        return ImageArrays(self.images[index], self.labels[index])

    def to(self, device: torch.device | str) -> ImageArrays:
        return ImageArrays(self.images.to(device), self.labels.to(device))

    def __len__(self) -> int:
        return self.images.shape[0]


@dataclass
class DatasetBundle:
    """A dataset's splits: always "train" and "test" (held-out images of the same classes);
    optionally "pretrain" (a disjoint class pool, labels 0..P-1) and "open_query"/"open_gallery"
    (a disjoint open-set pool). `mean`/`std` normalise the [0, 1] images per channel."""

    name: str
    class_names: list[str]
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    splits: dict[str, ImageArrays]

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def image_size(self) -> int:
        return self.splits["train"].images.shape[-1]


def channel_stats(images: Tensor) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and standard deviation of uint8 images, in [0, 1] units (exact, from
    per-channel histograms of the 256 levels)."""
    levels = torch.arange(256, dtype=torch.float64) / 255.0
    means, stds = [], []
    for channel in range(images.shape[1]):
        counts = torch.bincount(images[:, channel].reshape(-1), minlength=256).to(torch.float64)
        p = counts / counts.sum()
        mean = float((p * levels).sum())
        means.append(mean)
        stds.append(float((p * (levels - mean).square()).sum().sqrt()))
    return tuple(means), tuple(stds)


def first_per_class(labels: Tensor, num_classes: int | None, per_class: int | None) -> Tensor:
    """Indices (in original order) of the first `per_class` items of each of the classes
    0..num_classes-1; None keeps everything on that axis."""
    keep = torch.ones_like(labels, dtype=torch.bool)
    if num_classes is not None:
        keep &= labels < num_classes
    if per_class is not None and labels.numel():
        sorted_labels, order = torch.sort(labels, stable=True)
        counts = torch.bincount(sorted_labels)
        starts = counts.cumsum(0) - counts
        rank = torch.empty_like(labels)
        rank[order] = torch.arange(labels.numel()) - starts[sorted_labels]
        keep &= rank < per_class
    return keep.nonzero().squeeze(1)


def iterate_batches(n: int, batch_size: int, generator: torch.Generator, drop_last: bool = True) -> Iterator[Tensor]:
    """Index tensors of consecutive batches of a random permutation of range(n), drawn on the
    generator's device. With drop_last, a final short batch is skipped."""
    perm = torch.randperm(n, generator=generator, device=generator.device)
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        yield perm[start : start + batch_size]
