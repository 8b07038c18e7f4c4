"""Real-data loaders: TinyImageNet and CIFAR-10 JPEG zips, ImageFolder trees, Fashion-MNIST, errors."""
from __future__ import annotations

import gzip
import io
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from benchbackcompat.data import DatasetRequest, get_dataset, load_dataset
from benchbackcompat.errors import BenchError, UnknownNameError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TINY = SHARED / "tiny-imagenet-200-r300.zip"
CIFAR_JPEG = SHARED / "cifar-10-jpeg.zip"
FASHION = Path("/usr/share/datasets/fashion-mnist")


def png(rgb: tuple[int, int, int], size: int = 4, palette: bool = False) -> bytes:
    buffer = io.BytesIO()
    image = Image.new("RGB", (size, size), rgb)
    (image.convert("P", palette=Image.Palette.ADAPTIVE) if palette else image).save(buffer, format="PNG")
    return buffer.getvalue()


def jpeg_grey(level: int, size: int = 4) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (size, size), level).save(buffer, format="JPEG", quality=100)
    return buffer.getvalue()


TREE = {  # an ImageFolder tree nested in one top-level folder; colours identify the files
    "data/train/cat/b.png": png((10, 20, 30)),
    "data/train/cat/a.png": png((1, 2, 3)),
    "data/train/cat/c.png": png((40, 50, 60), palette=True),
    "data/train/ant/z.png": png((200, 100, 0)),
    "data/train/ant/grey.jpg": jpeg_grey(128),
    "data/test/ant/t.png": png((7, 7, 7)),
    "data/test/cat/t.png": png((9, 9, 9)),
    "data/README.txt": b"not an image",
}


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def pixels(bundle, split: str) -> list[list[int]]:
    return bundle.splits[split].images[:, :, 0, 0].tolist()


def request(tmp: Path, root: Path | None, **fields) -> DatasetRequest:
    return DatasetRequest(cache_dir=tmp / "cache", root=root, **fields)


def test_imagefolder_zip_classes_order_and_pixels(tmp_path):
    bundle = load_dataset("imagefolder", request(tmp_path, write_zip(tmp_path / "tree.zip", TREE)))
    assert bundle.class_names == ["ant", "cat"]
    train = bundle.splits["train"]
    assert train.images.shape == (5, 3, 4, 4) and train.images.dtype == torch.uint8
    assert train.labels.tolist() == [0, 0, 1, 1, 1]  # file order: sorted names
    assert pixels(bundle, "train") == [[128, 128, 128], [200, 100, 0], [1, 2, 3], [10, 20, 30], [40, 50, 60]]
    assert pixels(bundle, "test") == [[7, 7, 7], [9, 9, 9]] and bundle.splits["test"].labels.tolist() == [0, 1]


def test_imagefolder_limits_and_resize(tmp_path):
    root = write_zip(tmp_path / "tree.zip", TREE)
    bundle = load_dataset("imagefolder", request(tmp_path, root, num_classes=1, train_per_class=1, image_size=2))
    assert bundle.class_names == ["ant"] and bundle.image_size == 2
    assert bundle.splits["train"].images[0].flatten().tolist() == [128] * 12
    with pytest.raises(BenchError, match="num_classes=3"):
        load_dataset("imagefolder", request(tmp_path, root, num_classes=3))


def test_imagefolder_folder_equals_zip_and_folder_with_one_zip(tmp_path):
    (tmp_path / "z").mkdir()
    from_zip = load_dataset("imagefolder", request(tmp_path, write_zip(tmp_path / "z" / "tree.zip", TREE)))
    for name, data in TREE.items():
        (tmp_path / "dir" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "dir" / name).write_bytes(data)
    from_dir = load_dataset("imagefolder", request(tmp_path, tmp_path / "dir"))
    from_parent = load_dataset("imagefolder", request(tmp_path, tmp_path / "z"))
    for other in (from_dir, from_parent):
        assert other.class_names == from_zip.class_names
        for split in ("train", "test"):
            assert torch.equal(other.splits[split].images, from_zip.splits[split].images)


def test_changed_source_invalidates_the_cache(tmp_path):
    root = tmp_path / "tree.zip"
    write_zip(root, TREE)
    first = load_dataset("imagefolder", request(tmp_path, root))
    write_zip(root, TREE | {"data/test/cat/t.png": png((99, 99, 99), size=4)})
    os.utime(root, ns=(1, 1))
    second = load_dataset("imagefolder", request(tmp_path, root))
    assert pixels(first, "test")[1] == [9, 9, 9] and pixels(second, "test")[1] == [99, 99, 99]
    assert len(list((tmp_path / "cache").glob("imagefolder-*.pt"))) == 2


def test_zip_member_escaping_the_archive_is_refused(tmp_path):
    root = write_zip(tmp_path / "evil.zip", TREE | {"../evil.png": png((1, 1, 1))})
    with pytest.raises(BenchError, match="escaping"):
        load_dataset("imagefolder", request(tmp_path, root))


def test_mixed_sizes_need_image_size(tmp_path):
    root = write_zip(tmp_path / "mixed.zip", TREE | {"data/train/ant/big.png": png((5, 5, 5), size=6)})
    with pytest.raises(BenchError, match="image_size"):
        load_dataset("imagefolder", request(tmp_path, root))
    assert load_dataset("imagefolder", request(tmp_path, root, image_size=4)).image_size == 4


@pytest.mark.parametrize("name", ["tinyimagenet", "cifar10-jpeg", "imagefolder", "cifar10", "cifar100"])
def test_missing_data_names_the_data_root_option(tmp_path, name):
    for root in (None, tmp_path / "empty"):
        (tmp_path / "empty").mkdir(exist_ok=True)
        with pytest.raises(BenchError, match="--data-root") as info:
            load_dataset(name, request(tmp_path, root, download=False))
        assert "\n" not in str(info.value)


def test_cifar10_from_a_local_torchvision_folder(tmp_path, monkeypatch):
    import torchvision.datasets.cifar as tv_cifar

    monkeypatch.setattr(tv_cifar, "check_integrity", lambda *args: True)  # the fake files have other md5s
    folder = tmp_path / "data" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    names = ["c0", "c1", "c2"]
    for index, file in enumerate(["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5",
                                  "test_batch"]):
        labels = [index % 3, (index + 1) % 3]
        data = np.stack([np.full(3072, 10 * index + k, dtype=np.uint8) for k in range(2)])
        (folder / file).write_bytes(pickle.dumps({"data": data, "labels": labels}))
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": names}))
    bundle = load_dataset("cifar10", request(tmp_path, folder, download=False, num_classes=2, train_per_class=2))
    assert bundle.class_names == ["c0", "c1"]
    train = bundle.splits["train"]  # labels by batch: [0,1] [1,2] [2,0] [0,1] [1,2]; first two of classes 0, 1
    assert train.labels.tolist() == [0, 1, 1, 0]
    assert train.images[:, 0, 0, 0].tolist() == [0, 1, 10, 21]
    assert train.images.shape == (4, 3, 32, 32)
    assert bundle.splits["test"].labels.tolist() == [0]  # test_batch labels [2, 0]: class 2 is dropped
    assert bundle.splits["test"].images[0, :, 5, 7].tolist() == [51, 51, 51]


def test_cifar100_names_its_folder(tmp_path):
    with pytest.raises(BenchError, match=r"cifar-100-python/"):
        load_dataset("cifar100", request(tmp_path, tmp_path, download=False))


def test_unknown_dataset_suggests_a_name():
    with pytest.raises(UnknownNameError, match="Did you mean 'cifar10'"):
        get_dataset("cifar11")


def test_request_fields_are_validated(tmp_path):
    with pytest.raises(BenchError, match="num_classes"):
        DatasetRequest(cache_dir=tmp_path, num_classes=0)


FAKE_TINY = {  # the official layout, two classes; one greyscale training image
    "tiny-imagenet-200/wnids.txt": b"n02\nn01\n",
    "tiny-imagenet-200/words.txt": b"n01\tone\nn02\ttwo\n",
    "tiny-imagenet-200/train/n01/images/n01_0.JPEG": jpeg_grey(200, size=8),
    "tiny-imagenet-200/train/n01/n01_boxes.txt": b"n01_0.JPEG\t0\t0\t7\t7\n",
    "tiny-imagenet-200/train/n02/images/n02_0.JPEG": jpeg_grey(30, size=8),
    "tiny-imagenet-200/train/n02/images/n02_1.JPEG": jpeg_grey(60, size=8),
    "tiny-imagenet-200/val/images/val_0.JPEG": jpeg_grey(90, size=8),
    "tiny-imagenet-200/val/images/val_1.JPEG": jpeg_grey(120, size=8),
    "tiny-imagenet-200/val/val_annotations.txt": b"val_0.JPEG\tn01\t0\t0\t7\t7\nval_1.JPEG\tn02\t0\t0\t7\t7\n",
}


def test_tinyimagenet_layout_from_folder_and_zip(tmp_path):
    for name, data in FAKE_TINY.items():
        (tmp_path / "dir" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "dir" / name).write_bytes(data)
    (tmp_path / "zip").mkdir()
    write_zip(tmp_path / "zip" / "tiny-imagenet-200.zip", FAKE_TINY)
    for root in (tmp_path / "dir", tmp_path / "dir" / "tiny-imagenet-200", tmp_path / "zip"):
        bundle = load_dataset("tinyimagenet", request(tmp_path, root))
        assert bundle.class_names == ["n02", "n01"]  # wnids.txt order
        assert bundle.splits["train"].labels.tolist() == [1, 0, 0]  # file order: n01 before n02
        assert bundle.splits["train"].images.shape == (3, 3, 8, 8)
        assert pixels(bundle, "train") == [[200] * 3, [30] * 3, [60] * 3]  # greyscale expanded to RGB
        assert bundle.splits["test"].labels.tolist() == [1, 0] and pixels(bundle, "test") == [[90] * 3, [120] * 3]


def decode_member(archive: zipfile.ZipFile, name: str) -> torch.Tensor:
    return torch.from_numpy(np.array(Image.open(io.BytesIO(archive.read(name))).convert("RGB"))).permute(2, 0, 1)


@pytest.mark.skipif(not TINY.is_file(), reason="tiny-imagenet-200-r300.zip not available")
def test_tinyimagenet_zip_subset(tmp_path):
    fields = dict(num_classes=3, train_per_class=5, test_per_class=2)
    bundle = load_dataset("tinyimagenet", request(tmp_path, SHARED, **fields))
    top = "tiny-imagenet-200/"
    with zipfile.ZipFile(TINY) as archive:
        wnids = archive.read(top + "wnids.txt").decode().split()[:3]
        first_train = sorted(n for n in archive.namelist() if n.startswith(f"{top}train/{wnids[0]}/images/"))[0]
        annotations = archive.read(top + "val/val_annotations.txt").decode().splitlines()
        first_val_of_class_1 = next(line.split("\t")[0] for line in annotations if line.split("\t")[1] == wnids[1])
        expected_train = decode_member(archive, first_train)
        expected_val = decode_member(archive, f"{top}val/images/{first_val_of_class_1}")
    assert bundle.class_names == wnids
    train, test = bundle.splits["train"], bundle.splits["test"]
    assert train.images.shape == (15, 3, 64, 64)
    assert train.labels.tolist() == [0] * 5 + [1] * 5 + [2] * 5
    assert torch.equal(train.images[0], expected_train)
    assert sorted(test.labels.tolist()) == [0, 0, 1, 1, 2, 2]  # val_annotations.txt order, two per class
    assert torch.equal(test.images[test.labels == 1][0], expected_val)
    assert load_dataset("tinyimagenet", request(tmp_path, TINY, **fields)).class_names == wnids  # root = the zip


@pytest.mark.skipif(not CIFAR_JPEG.is_file(), reason="cifar-10-jpeg.zip not available")
def test_cifar10_jpeg_zip(tmp_path):
    bundle = load_dataset("cifar10-jpeg", request(tmp_path, SHARED, train_per_class=3, test_per_class=2))
    assert bundle.class_names == ["airplane", "automobile", "bird", "cat", "deer",
                                  "dog", "frog", "horse", "ship", "truck"]
    assert bundle.splits["train"].images.shape == (30, 3, 32, 32) and bundle.image_size == 32
    assert bundle.splits["test"].labels.tolist() == [c for c in range(10) for _ in range(2)]


@pytest.mark.skipif(not (FASHION / "train-images-idx3-ubyte.gz").is_file(), reason="Fashion-MNIST not installed")
def test_fashion_mnist_default_root(tmp_path):
    bundle = load_dataset("fashion-mnist", request(tmp_path, None, num_classes=2, train_per_class=3, test_per_class=1))
    assert bundle.class_names == ["T-shirt/top", "Trouser"]
    train = bundle.splits["train"]
    assert train.images.shape == (6, 3, 28, 28) and train.labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert torch.equal(train.images[:, 0], train.images[:, 2])  # grey expanded to RGB
    raw = gzip.decompress((FASHION / "train-images-idx3-ubyte.gz").read_bytes())[16:]
    labels = np.frombuffer(gzip.decompress((FASHION / "train-labels-idx1-ubyte.gz").read_bytes())[8:], np.uint8)
    first = int(np.flatnonzero(labels == 0)[0])
    assert train.images[0, 0].flatten().tolist() == list(raw[first * 784 : (first + 1) * 784])


@pytest.mark.skipif(not (FASHION / "train-images-idx3-ubyte.gz").is_file(), reason="Fashion-MNIST not installed")
def test_fashion_mnist_uncompressed_copy(tmp_path):
    for file in FASHION.glob("*.gz"):
        (tmp_path / file.stem).write_bytes(gzip.decompress(file.read_bytes()))
    fields = dict(num_classes=10, train_per_class=1, test_per_class=1, image_size=14)
    bundle = load_dataset("fashion-mnist", request(tmp_path, tmp_path, **fields))
    assert bundle.splits["train"].images.shape == (10, 3, 14, 14) and bundle.num_classes == 10
