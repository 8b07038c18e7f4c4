"""The embedded dataset: determinism, prefix stability, disjoint pools, caching, difficulty."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from benchbackcompat.data import DatasetRequest, load_dataset
from benchbackcompat.data import embedded
from benchbackcompat.data.render import _mul32, hash_keys
from benchbackcompat.errors import BenchError

SMALL = dict(num_classes=6, train_per_class=8, test_per_class=4, open_classes=2, pretrain_classes=4)


def load(tmp: Path, **fields) -> object:
    return load_dataset("embedded", DatasetRequest(cache_dir=tmp, **(SMALL | fields)))


def by_class(images: torch.Tensor, classes: int) -> torch.Tensor:
    return images.view(classes, -1, *images.shape[1:])


def test_mul32_is_exact_modular_multiplication():
    rng = random.Random(0)
    xs = [rng.randrange(2**32) for _ in range(200)] + [0, 2**32 - 1]
    for c in (0x7FEB352D, 0x846CA68B, 0xFFFFFFFF):
        got = _mul32(torch.tensor(xs), c).tolist()
        assert got == [(x * c) % 2**32 for x in xs]


def test_hash_keys_depend_on_every_key():
    base = hash_keys(1, 2, 3)
    assert 0 <= int(base) < 2**32
    assert len({int(base), int(hash_keys(0, 2, 3)), int(hash_keys(1, 0, 3)), int(hash_keys(1, 2, 0))}) == 4
    assert int(hash_keys(1, torch.tensor([2, 5]), 3)[0]) == int(base)


def test_universe_has_400_plus_unique_attribute_tuples():
    assert len(embedded.UNIVERSE) >= 400
    assert len(set(embedded.UNIVERSE)) == len(embedded.UNIVERSE)
    assert len({embedded.class_name(i) for i in range(len(embedded.UNIVERSE))}) == len(embedded.UNIVERSE)


def test_shapes_dtypes_labels_and_splits(tmp_path):
    bundle = load(tmp_path)
    assert set(bundle.splits) == {"train", "test", "open_query", "open_gallery", "pretrain"}
    expected = {"train": (6, 8), "test": (6, 4), "open_query": (2, 100), "open_gallery": (2, 50), "pretrain": (4, 8)}
    for split, (classes, per_class) in expected.items():
        arrays = bundle.splits[split]
        assert arrays.images.shape == (classes * per_class, 3, 32, 32)
        assert arrays.images.dtype == torch.uint8 and arrays.images.is_contiguous()
        assert arrays.labels.dtype == torch.int64
        assert arrays.labels.tolist() == [c for c in range(classes) for _ in range(per_class)]
    assert bundle.num_classes == 6 and bundle.image_size == 32 and len(bundle.class_names) == 6
    assert all(0.2 < m < 0.8 for m in bundle.mean) and all(0.1 < s < 0.4 for s in bundle.std)
    resized = load(tmp_path, image_size=20, open_classes=0, pretrain_classes=0)
    assert resized.image_size == 20 and set(resized.splits) == {"train", "test"}


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    a = load(tmp_path / "a", seed=3)
    b = load(tmp_path / "b", seed=3)
    c = load(tmp_path / "c", seed=4)
    for split in a.splits:
        assert torch.equal(a.splits[split].images, b.splits[split].images)
    assert a.class_names == b.class_names
    assert not torch.equal(a.splits["train"].images, c.splits["train"].images)


def test_fewer_images_or_classes_are_a_prefix(tmp_path):
    small = load(tmp_path, train_per_class=5, test_per_class=2)
    large = load(tmp_path, train_per_class=12, test_per_class=4)
    assert torch.equal(by_class(small.splits["train"].images, 6), by_class(large.splits["train"].images, 6)[:, :5])
    assert torch.equal(by_class(small.splits["test"].images, 6), by_class(large.splits["test"].images, 6)[:, :2])
    more = load(tmp_path, num_classes=9)
    assert more.class_names[:6] == small.class_names
    assert torch.equal(by_class(more.splits["train"].images, 9)[:6, :5], by_class(small.splits["train"].images, 6))


def test_train_and_test_images_differ(tmp_path):
    bundle = load(tmp_path)
    train = bundle.splits["train"].images.flatten(1)
    test = bundle.splits["test"].images.flatten(1)
    assert not (train[:, None] == test[None]).all(-1).any()


def test_pools_are_disjoint_and_cover_the_request():
    train, open_set, pretrain = embedded.pools(0, 100, 50, 250)
    ids = torch.cat([train, open_set, pretrain]).tolist()
    assert (len(train), len(open_set), len(pretrain)) == (100, 50, 250)
    assert len(set(ids)) == 400 and all(0 <= i < len(embedded.UNIVERSE) for i in ids)
    assert not torch.equal(embedded.pools(1, 100, 50, 250)[0], train)  # the seed mixes the pools
    shapes = {embedded.UNIVERSE[i][0] for i in train.tolist()}
    assert len(shapes) == len(embedded.SHAPES)  # pools are mixed in attributes


def test_bundle_uses_the_training_pool(tmp_path):
    train, _, _ = embedded.pools(0, 6, 2, 4)
    assert load(tmp_path).class_names == [embedded.class_name(int(i)) for i in train]


def test_pools_larger_than_the_universe_are_refused(tmp_path):
    with pytest.raises(BenchError, match="exceeds"):
        load(tmp_path, num_classes=300, open_classes=100, pretrain_classes=200)


def test_second_load_reads_the_cache(tmp_path, monkeypatch):
    first = load(tmp_path)
    assert len(list(tmp_path.glob("embedded-*.pt"))) == 1

    def fail(*args, **kwargs):
        raise AssertionError("rendered again instead of reading the cache")

    monkeypatch.setattr(embedded, "_render", fail)
    second = load(tmp_path)
    assert torch.equal(first.splits["pretrain"].images, second.splits["pretrain"].images)
    assert second.class_names == first.class_names and second.mean == first.mean
    with pytest.raises(AssertionError):  # another request is another cache entry
        load(tmp_path, seed=7)


def test_classes_differ_but_raw_pixels_do_not_separate_them(tmp_path):
    bundle = load(tmp_path, num_classes=20, train_per_class=40, test_per_class=20, open_classes=0, pretrain_classes=0)
    train, test = bundle.splits["train"], bundle.splits["test"]
    x = train.images.flatten(1).float() / 255
    means = torch.stack([x[train.labels == c].mean(0) for c in range(20)])
    distances = torch.cdist(means, means) + torch.eye(20) * 1e9
    assert distances.min() > 1.0  # no two classes share their mean image
    predicted = torch.cdist(test.images.flatten(1).float() / 255, means).argmin(1)
    accuracy = (predicted == test.labels).float().mean().item()
    assert 0.05 < accuracy < 0.6  # above chance, far from solved on raw pixels
