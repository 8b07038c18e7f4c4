"""Datasets: the registry, the embedded dataset, real-data loaders and device-side augmentation."""
from __future__ import annotations

from benchbackcompat.data.arrays import DatasetBundle, ImageArrays, iterate_batches
from benchbackcompat.data.augment import augment, normalise
from benchbackcompat.data.registry import DATASETS, DatasetEntry, DatasetRequest, get_dataset, load_dataset

__all__ = ["DATASETS", "DatasetBundle", "DatasetEntry", "DatasetRequest", "ImageArrays", "augment",
           "get_dataset", "iterate_batches", "load_dataset", "normalise"]
