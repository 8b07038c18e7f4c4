"""The dataset registry: what a caller asks for (DatasetRequest) and the built-in datasets."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from benchbackcompat.data import loaders
from benchbackcompat.data.arrays import DatasetBundle
from benchbackcompat.data.embedded import load_embedded
from benchbackcompat.errors import BenchError, UnknownNameError


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
    download: bool = True  # torchvision datasets may download when online

    def __post_init__(self) -> None:
        object.__setattr__(self, "cache_dir", Path(self.cache_dir))
        if self.root is not None:
            object.__setattr__(self, "root", Path(self.root))
        minimum = {"num_classes": 1, "train_per_class": 1, "test_per_class": 1, "image_size": 1,
                   "open_classes": 0, "pretrain_classes": 0}
        for name, least in minimum.items():
            value = getattr(self, name)
            if value is not None and value < least:
                raise BenchError(f"dataset {name} must be >= {least}, got {value}")


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    description: str
    load: Callable[[DatasetRequest], DatasetBundle]


DATASETS: dict[str, DatasetEntry] = {
    entry.name: entry
    for entry in (
        DatasetEntry("embedded", "procedurally rendered shapes (512-class universe; train, open-set and "
                     "pretraining pools), no download", load_embedded),
        DatasetEntry("cifar10", "CIFAR-10 via torchvision (local root, else download)", loaders.load_cifar10),
        DatasetEntry("cifar100", "CIFAR-100 via torchvision (local root, else download)", loaders.load_cifar100),
        DatasetEntry("tinyimagenet", "TinyImageNet-200, official layout (folder or zip); test = labelled val",
                     loaders.load_tinyimagenet),
        DatasetEntry("imagefolder", "any <root>/{train,test}/<class>/*.{jpg,png} tree (folder or zip)",
                     loaders.load_imagefolder),
        DatasetEntry("cifar10-jpeg", "CIFAR-10 as JPEG ImageFolder (cifar-10-jpeg.zip or folder)",
                     loaders.load_cifar10_jpeg),
        DatasetEntry("fashion-mnist", "Fashion-MNIST idx .gz files (grey expanded to RGB)", loaders.load_fashion_mnist),
    )
}


def get_dataset(name: str) -> DatasetEntry:
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownNameError("dataset", name, DATASETS) from None


def load_dataset(name: str, request: DatasetRequest) -> DatasetBundle:
    """Load dataset `name` for `request` (cached in request.cache_dir)."""
    return get_dataset(name).load(request)


def check_not_degenerate(name: str, bundle: DatasetBundle, request: DatasetRequest) -> None:
    """Refuse a dataset with fewer than two classes, or a class without training images: every metric would be
    trivially 100 or undefined."""
    classes = bundle.class_names
    if len(classes) < 2:
        raise BenchError(f"dataset {name!r} has {len(classes)} class(es) (from {request.root or 'its default source'}); "
                         "compatibility needs at least 2: add classes or raise data.num_classes")
    counts = torch.bincount(bundle.splits["train"].labels.cpu(), minlength=len(classes)).tolist()
    empty = [classes[i] for i, n in enumerate(counts[: len(classes)]) if n == 0]
    if empty:
        raise BenchError(f"dataset {name!r}: class {empty[0]!r} has no training images"
                         + (f" (nor {len(empty) - 1} others)" if len(empty) > 1 else "") + "; add images or remove it")
