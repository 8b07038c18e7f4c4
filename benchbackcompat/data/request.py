"""What a caller asks a dataset loader for."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchbackcompat.errors import BenchError


@dataclass(frozen=True)
class DatasetRequest:
    """What to load. Fields left None take the dataset's defaults (all images, native size)."""

    cache_dir: Path  # where decoded uint8 arrays are cached
    root: Path | None = None  # data root for real datasets (folder with the files or zips, or the zip)
    num_classes: int | None = None  # keep the first N classes of the training pool
    train_per_class: int | None = None  # keep the first N training images of each class (file order)
    test_per_class: int | None = None
    image_size: int | None = None  # embedded: render size (default 32); real: resize to this if set
    seed: int = 0  # embedded: rendering seed
    open_classes: int | None = None  # embedded: size of the open-set pool
    pretrain_classes: int | None = None  # embedded: size of the pretraining pool
    pretrain_per_class: int | None = None  # embedded: images per pretraining class (None: train_per_class)
    pretrain_resolution: int | None = None  # embedded: the pretraining images seen at this resolution (None: full)
    pretrain_saturation: float | None = None  # embedded: the pretraining images' colour kept, 0 = greyscale (None: 1)
    download: bool = True  # torchvision datasets may download when online

    def __post_init__(self) -> None:
        object.__setattr__(self, "cache_dir", Path(self.cache_dir))
        if self.root is not None:
            object.__setattr__(self, "root", Path(self.root))
        minimum = {"num_classes": 1, "train_per_class": 1, "test_per_class": 1, "image_size": 1,
                   "open_classes": 0, "pretrain_classes": 0, "pretrain_per_class": 1,
                   "pretrain_resolution": 2, "pretrain_saturation": 0}
        for name, least in minimum.items():
            value = getattr(self, name)
            if value is not None and value < least:
                raise BenchError(f"dataset {name} must be >= {least}, got {value}")
