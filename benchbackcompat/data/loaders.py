"""Loaders of real datasets: torchvision CIFAR, TinyImageNet, ImageFolder trees, Fashion-MNIST.

Each resolves its source under request.root, keeps the first `num_classes` classes and the first
`train_per_class`/`test_per_class` files of each class (in file order) before decoding, and caches
the decoded uint8 arrays keyed by the source's size/mtime and those request fields.
"""
from __future__ import annotations

import gzip
import io
import math
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from benchbackcompat.data.arrays import DatasetBundle, ImageArrays, channel_stats, first_per_class
from benchbackcompat.data.cache import cached, file_fingerprint
from benchbackcompat.data.decode import decode_stream, resize_images
from benchbackcompat.data.sources import FileTree, find_prefix, is_image, locate, open_tree
from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.files import TooLarge, read_regular
from benchbackcompat.runtime.logs import log

if TYPE_CHECKING:
    from benchbackcompat.data.request import DatasetRequest

FASHION_MNIST_ROOT = Path("/usr/share/datasets/fashion-mnist")
FASHION_MNIST_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
                         "Bag", "Ankle boot"]
TINYIMAGENET_FILES = ("tiny-imagenet-200-r300.zip", "tiny-imagenet-200.zip", "tiny-imagenet-200")
Files = dict[str, tuple[list[str], list[int]]]  # split -> (file names in file order, labels)


def _content_key(request: DatasetRequest, source: Any) -> dict[str, Any]:
    return {"source": source, "num_classes": request.num_classes, "train_per_class": request.train_per_class,
            "test_per_class": request.test_per_class, "image_size": request.image_size}


def _check_classes(dataset: str, available: int, request: DatasetRequest) -> int:
    if request.num_classes is not None and request.num_classes > available:
        raise BenchError(f"{dataset} has {available} classes but num_classes={request.num_classes}; lower it")
    return available if request.num_classes is None else request.num_classes


def _bundle(name: str, class_names: list[str], splits: dict[str, ImageArrays]) -> DatasetBundle:
    mean, std = channel_stats(splits["train"].images)
    return DatasetBundle(name, class_names, mean, std, splits)


# ---- trees of image files (folder or zip) -------------------------------------------------------

def _from_files(name: str, tree: FileTree, class_names: list[str], files: Files,
                request: DatasetRequest) -> DatasetBundle:
    """Decode the kept files of each split; files[split] = (names in file order, labels)."""
    keep = _check_classes(name, len(class_names), request)
    per_class = {"train": request.train_per_class, "test": request.test_per_class}
    splits = {}
    for split, (names, labels) in files.items():
        label_tensor = torch.tensor(labels, dtype=torch.int64)
        index = first_per_class(label_tensor, keep, per_class[split]).tolist()
        files = ((names[i], tree.read(names[i])) for i in index)  # read as they are decoded, a chunk at a time
        images = decode_stream(files, request.image_size, f"{tree.path} ({split})")
        splits[split] = ImageArrays(images, label_tensor[index])
    return _bundle(name, class_names[:keep], splits)


def _unzip(pairs: list[tuple[str, int]]) -> tuple[list[str], list[int]]:
    return [name for name, _ in pairs], [label for _, label in pairs]


def _is_imagefolder(path: Path) -> bool:
    return ((path / "train").is_dir() and (path / "test").is_dir()) or any(
        (sub / "train").is_dir() and (sub / "test").is_dir() for sub in path.iterdir() if sub.is_dir())


def _imagefolder_files(tree: FileTree) -> tuple[list[str], Files]:
    prefix = find_prefix(tree.names, "train/", "test/")
    if prefix is None:
        raise BenchError(f"{tree.path} has no train/ and test/ folders; expected <root>/{{train,test}}/<class>/*.jpg")
    by_split: dict[str, list[tuple[str, str]]] = {"train": [], "test": []}
    for name in tree.names:
        parts = name[len(prefix):].split("/")
        if name.startswith(prefix) and len(parts) == 3 and parts[0] in by_split and is_image(name):
            by_split[parts[0]].append((parts[1], name))
    classes = sorted({c for c, _ in by_split["train"]})
    unknown = sorted({c for c, _ in by_split["test"]} - set(classes))
    if unknown:
        raise BenchError(f"{tree.path}: test classes {unknown[:3]} have no train/ folder; "
                         "test must hold the train classes")
    index = {c: i for i, c in enumerate(classes)}
    return classes, {split: _unzip([(n, index[c]) for c, n in items]) for split, items in by_split.items()}


def _load_tree(name: str, request: DatasetRequest, path: Path,
               parse: Callable[[FileTree], tuple[list[str], Files]]) -> DatasetBundle:
    tree = open_tree(path)
    log.info(f"dataset {name}: source {path}")

    def build() -> DatasetBundle:
        class_names, files = parse(tree)
        return _from_files(name, tree, class_names, files, request)

    return cached(request.cache_dir, name, _content_key(request, tree.fingerprint), build)


def load_imagefolder(request: DatasetRequest) -> DatasetBundle:
    """Any ImageFolder tree <root>/{train,test}/<class>/*.{jpg,png} (folder or zip); classes in
    alphabetical order. `root` is the tree, the zip, or a folder holding exactly one zip."""
    expected = "train/<class>/*.jpg and test/<class>/*.jpg (a folder or a zip)"
    root = request.root
    zips = sorted(root.glob("*.zip")) if root is not None and root.is_dir() else []
    path = locate("imagefolder", root, [zips[0].name] if len(zips) == 1 else [], _is_imagefolder, expected)
    return _load_tree("imagefolder", request, path, _imagefolder_files)


def load_cifar10_jpeg(request: DatasetRequest) -> DatasetBundle:
    """CIFAR-10 stored as a JPEG ImageFolder (cifar-10-jpeg.zip); alphabetical = CIFAR-10 order."""
    path = locate("cifar10-jpeg", request.root, ["cifar-10-jpeg.zip", "cifar-10-jpeg"], _is_imagefolder,
                  "cifar-10-jpeg.zip or cifar-10-jpeg/{train,test}/")
    return _load_tree("cifar10-jpeg", request, path, _imagefolder_files)


def _tinyimagenet_files(tree: FileTree) -> tuple[list[str], Files]:
    prefix = find_prefix(tree.names, "wnids.txt")
    annotations = None if prefix is None else prefix + "val/val_annotations.txt"
    if prefix is None or annotations not in tree.names:
        raise BenchError(f"{tree.path} is not in the TinyImageNet layout (wnids.txt, train/, val/val_annotations.txt)")
    wnids = tree.read(prefix + "wnids.txt").decode().split()
    index = {w: i for i, w in enumerate(wnids)}
    train: list[tuple[str, int]] = []
    for name in tree.names:
        parts = name[len(prefix):].split("/")
        if name.startswith(prefix + "train/") and len(parts) == 4 and parts[2] == "images" and is_image(name):
            if parts[1] not in index:
                raise BenchError(f"{tree.path}: train class {parts[1]} is not listed in wnids.txt")
            train.append((name, index[parts[1]]))
    test: list[tuple[str, int]] = []
    for number, line in enumerate(tree.read(annotations).decode(errors="replace").splitlines(), 1):
        if line.strip():
            file, wnid = (line.split("\t") + [""])[:2]
            if wnid not in index:
                raise BenchError(f"{tree.path}: {annotations} line {number} ({line[:60]!r}) does not give a file and a "
                                 "wnid of wnids.txt separated by a tab; fix or replace the annotations")
            test.append((f"{prefix}val/images/{file}", index[wnid]))
    return wnids, {"train": _unzip(train), "test": _unzip(test)}


def load_tinyimagenet(request: DatasetRequest) -> DatasetBundle:
    """TinyImageNet-200 in its official layout (zip or folder): train = train/<wnid>/images,
    test = the labelled val split; classes in wnids.txt order; greyscale converted to RGB."""
    path = locate("tinyimagenet", request.root, TINYIMAGENET_FILES, lambda p: (p / "wnids.txt").is_file(),
                  " or ".join(TINYIMAGENET_FILES) + "/")
    return _load_tree("tinyimagenet", request, path, _tinyimagenet_files)


# ---- in-memory arrays (torchvision CIFAR, Fashion-MNIST) ---------------------------------------

def _from_arrays(name: str, class_names: list[str], arrays: dict[str, tuple[Tensor, Tensor]],
                 request: DatasetRequest) -> DatasetBundle:
    """arrays[split] = (uint8 N x C x H x W images, labels); keep, expand grey to RGB, resize."""
    keep = _check_classes(name, len(class_names), request)
    per_class = {"train": request.train_per_class, "test": request.test_per_class}
    splits = {}
    for split, (images, labels) in arrays.items():
        index = first_per_class(labels, keep, per_class[split])
        kept = images[index].expand(-1, 3, -1, -1).contiguous()
        if request.image_size is not None:
            kept = resize_images(kept, request.image_size)
        splits[split] = ImageArrays(kept, labels[index])
    return _bundle(name, class_names[:keep], splits)


def _load_cifar(request: DatasetRequest, name: str, folder: str) -> DatasetBundle:
    from torchvision.datasets import CIFAR10, CIFAR100

    dataset_class = CIFAR10 if name == "cifar10" else CIFAR100
    root = request.root if request.root is not None else request.cache_dir / "downloads"
    root = root.parent if root.name == folder else root
    hint = f"pass --data-root DIR containing {folder}/"
    if not (root / folder).is_dir():
        if not request.download:
            raise BenchError(f"{name} not found under {root} (download disabled): {hint}")
        try:
            for train in (True, False):
                dataset_class(str(root), train=train, download=True)
        except (OSError, RuntimeError, ValueError) as exc:
            raise BenchError(f"{name} not found under {root} and download failed (offline?): {hint} "
                             f"({type(exc).__name__})") from exc
    source = [file_fingerprint(p) for p in sorted((root / folder).iterdir()) if p.is_file()]
    log.info(f"dataset {name}: source {root / folder}")

    def build() -> DatasetBundle:
        try:
            parts = {"train": dataset_class(str(root), train=True), "test": dataset_class(str(root), train=False)}
        except RuntimeError as exc:
            raise BenchError(f"{name}: {root / folder} is incomplete or corrupt ({exc}); {hint}") from exc
        arrays = {split: (torch.from_numpy(ds.data).permute(0, 3, 1, 2), torch.tensor(ds.targets, dtype=torch.int64))
                  for split, ds in parts.items()}
        return _from_arrays(name, list(parts["train"].classes), arrays, request)

    return cached(request.cache_dir, name, _content_key(request, source), build)


def load_cifar10(request: DatasetRequest) -> DatasetBundle:
    """CIFAR-10 via torchvision: the local root first, a download only if allowed and absent."""
    return _load_cifar(request, "cifar10", "cifar-10-batches-py")


def load_cifar100(request: DatasetRequest) -> DatasetBundle:
    """CIFAR-100 (fine labels) via torchvision: the local root first, a download only if allowed and absent."""
    return _load_cifar(request, "cifar100", "cifar-100-python")


MAX_IDX_BYTES = 256 * 2**20  # an idx file of Fashion-MNIST: its 60,000 training images are 47 MB


def _read_idx(path: Path) -> np.ndarray:
    """An idx file (optionally gzipped): big-endian header (magic, then one uint32 per dimension). Read and unpacked
    up to ``MAX_IDX_BYTES``; a damaged, truncated or oversized file is one line naming it."""
    fix = "fetch it again (apt-get install --reinstall dataset-fashion-mnist) or check --data-root"
    too_large = BenchError(f"fashion-mnist: {path} unpacks to more than {MAX_IDX_BYTES // 2**20} MiB, above the limit "
                           f"for an idx file (a decompression bomb?); {fix}")
    try:
        data = read_regular(path, MAX_IDX_BYTES)
        if path.suffix == ".gz":
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
                data = stream.read(MAX_IDX_BYTES + 1)
    except TooLarge:
        raise too_large from None
    except (OSError, EOFError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise BenchError(f"fashion-mnist: {path} cannot be read ({type(error).__name__}: {why}); {fix}") from None
    if len(data) > MAX_IDX_BYTES:
        raise too_large
    ndim = data[3] if len(data) >= 4 else 0
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    if len(data) < 4 or data[2] != 0x08 or len(data) != 4 + 4 * ndim + math.prod(dims):
        raise BenchError(f"fashion-mnist: {path} is not a uint8 idx file (damaged or truncated?); {fix}")
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fashion_mnist(request: DatasetRequest) -> DatasetBundle:
    """Fashion-MNIST from its four idx files (.gz or not); grey images expanded to 3 channels."""
    stems = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
             "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}

    def find(folder: Path, stem: str) -> Path | None:
        return next((p for p in (folder / f"{stem}.gz", folder / stem) if p.is_file()), None)

    root = request.root if request.root is not None else FASHION_MNIST_ROOT
    folder = locate("fashion-mnist", root, ["fashion-mnist"], lambda p: find(p, stems["train"][0]) is not None,
                    "train-images-idx3-ubyte.gz and the other three idx files (apt-get install dataset-fashion-mnist)")
    files = {split: [find(folder, stem) for stem in pair] for split, pair in stems.items()}
    missing = [stem for split, pair in stems.items() for stem, path in zip(pair, files[split]) if path is None]
    if missing:
        raise BenchError(f"fashion-mnist: {missing[0]}(.gz) not found in {folder}; pass --data-root DIR containing it")
    source = [file_fingerprint(p) for pair in files.values() for p in pair]

    def build() -> DatasetBundle:
        arrays = {split: (torch.from_numpy(_read_idx(images).copy())[:, None],
                          torch.from_numpy(_read_idx(labels).astype(np.int64)))
                  for split, (images, labels) in files.items()}
        return _from_arrays("fashion-mnist", FASHION_MNIST_CLASSES, arrays, request)

    return cached(request.cache_dir, "fashion-mnist", _content_key(request, source), build)
