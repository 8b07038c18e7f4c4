"""The dataset registry: the built-in datasets, loaded for a :class:`DatasetRequest`."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchbackcompat.data import loaders
from benchbackcompat.data.arrays import DatasetBundle
from benchbackcompat.data.embedded import load_embedded
from benchbackcompat.data.request import DatasetRequest
from benchbackcompat.errors import UnknownNameError

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
    """Load dataset `name` for `request` (cached in request.cache_dir)."""
    return get_dataset(name).load(request)
