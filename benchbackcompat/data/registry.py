"""The dataset registry: the built-in datasets, loaded for a :class:`DatasetRequest`."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from benchbackcompat.data import loaders
from benchbackcompat.data.arrays import DatasetBundle
from benchbackcompat.data.embedded import load_embedded
from benchbackcompat.data.request import DatasetRequest
from benchbackcompat.data.memory import check_images_fit, out_of_memory
from benchbackcompat.errors import BenchError, UnknownNameError

__all__ = ["DATASETS", "DatasetEntry", "DatasetRequest", "get_dataset", "load_dataset"]


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
    """Load dataset `name` for `request` (cached in request.cache_dir); images that would not fit in memory at
    ``request.image_size`` (at least the training and test images it asks for) are refused first."""
    entry = get_dataset(name)
    if request.image_size and request.num_classes and request.train_per_class:
        images = request.num_classes * (request.train_per_class + (request.test_per_class or 0)) + (
            request.pretrain_classes or 0) * (request.pretrain_per_class or request.train_per_class)
        check_images_fit(images, request.image_size, f"dataset {name!r} at data.image_size={request.image_size}")
    try:
        return entry.load(request)
    except (MemoryError, RuntimeError) as error:
        if not out_of_memory(error):
            raise
        at = f" at data.image_size={request.image_size}" if request.image_size else ""
        raise BenchError(f"dataset {name!r}{at}: out of memory while loading it ({type(error).__name__}); lower "
                         "data.image_size (or the images per class)") from None


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
