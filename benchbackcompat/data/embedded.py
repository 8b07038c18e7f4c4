"""The embedded dataset (default): procedurally rendered classes, no download needed.

The universe has one class per (shape, colour, background) triple; a seeded permutation of it
is cut into disjoint pools: training (`num_classes`), open-set (`open_classes`) and
pretraining (`pretrain_classes`). An image depends on (seed, class id, split, index) only.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from benchbackcompat.data.arrays import DatasetBundle, ImageArrays, channel_stats
from benchbackcompat.data.cache import cached
from benchbackcompat.data.memory import check_images_fit
from benchbackcompat.data.render import BACKGROUNDS, COLOURS, SHAPES, hash_keys, noise_bank, noise_bank_bytes, render
from benchbackcompat.errors import BenchError

if TYPE_CHECKING:
    from benchbackcompat.data.request import DatasetRequest

RENDER_VERSION = 1  # bump when the rendering changes, to invalidate caches
UNIVERSE: tuple[tuple[str, str, str], ...] = tuple(itertools.product(SHAPES, COLOURS, BACKGROUNDS))
DEFAULTS = {"num_classes": 100, "open_classes": 50, "pretrain_classes": 250,
            "train_per_class": 300, "test_per_class": 50, "image_size": 32}
OPEN_QUERY_PER_CLASS, OPEN_GALLERY_PER_CLASS = 100, 50
SPLIT_CODES = {"train": 1, "test": 2, "open_query": 3, "open_gallery": 4}  # pretrain renders as "train"
_POOL_KEY = 0x706F6F6C
_CHUNK_PIXELS = 1024 * 32 * 32  # pixels rendered at once: 1024 images at the default size, fewer of larger ones


def class_name(class_id: int) -> str:
    shape, colour, background = UNIVERSE[class_id]
    return f"{colour}-{shape}-{background}"


def class_order(seed: int) -> Tensor:
    """A seeded permutation of the universe's class ids (pools are consecutive runs of it)."""
    return torch.sort(hash_keys(seed, _POOL_KEY, torch.arange(len(UNIVERSE))), stable=True).indices


def pools(seed: int, num_classes: int, open_classes: int, pretrain_classes: int) -> tuple[Tensor, Tensor, Tensor]:
    """Universe class ids of the training, open-set and pretraining pools (disjoint)."""
    sizes = [num_classes, open_classes, pretrain_classes]
    if sum(sizes) > len(UNIVERSE):
        raise BenchError(f"embedded dataset: num_classes + open_classes + pretrain_classes = {sum(sizes)} exceeds "
                         f"the {len(UNIVERSE)} classes of the universe; lower them")
    train, open_set, pretrain = torch.split(class_order(seed)[: sum(sizes)], sizes)
    return train, open_set, pretrain


@contextmanager
def _one_thread() -> Iterator[None]:
    """Rendering is many ops on ~1M-element tensors: intra-op threads mostly add synchronisation
    (on 2 busy cores, 1 thread renders the default request ~10x faster than 2)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _render(seed: int, ids: Tensor, codes: Tensor, index: Tensor, image_size: int) -> Tensor:
    """Images of universe classes `ids`, split codes `codes`, image indices `index` (n each)."""
    attrs = torch.tensor([(SHAPES.index(s), list(COLOURS).index(c), BACKGROUNDS.index(b)) for s, c, b in UNIVERSE])[ids]
    hues = torch.tensor(list(COLOURS.values()))[attrs[:, 1]]
    bank = noise_bank(seed, image_size)
    images = torch.empty(ids.numel(), 3, image_size, image_size, dtype=torch.uint8)
    chunk = max(1, _CHUNK_PIXELS // image_size**2)  # the renderer's float buffers stay this small at any size
    with _one_thread():
        for start in range(0, ids.numel(), chunk):
            part = slice(start, start + chunk)
            images[part] = render(seed, attrs[part, 0], hues[part], attrs[part, 2], ids[part], codes[part],
                                  index[part], image_size, bank)
    return images


def _layout(class_ids: Tensor, per_class: int, split: str) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Class-major (universe ids, split codes, image indices, labels) of one split."""
    count = class_ids.numel()
    return (class_ids.repeat_interleave(per_class), torch.full((count * per_class,), SPLIT_CODES[split]),
            torch.arange(per_class).repeat(count), torch.arange(count).repeat_interleave(per_class))


POOL_OPTIONS = ("pretrain_per_class", "pretrain_resolution", "pretrain_saturation")  # the pretraining pool's size and source
LUMA = (0.299, 0.587, 0.114)  # ITU-R BT.601 weights of R, G, B in luminance


def _settings(request: DatasetRequest) -> dict[str, int]:
    """The rendering settings (also the cache key): the pretraining pool's options only when set, so that the
    settings of a pool rendered like the training images are what they were before the options existed."""
    fields = {name: getattr(request, name) for name in DEFAULTS}
    settings = {name: DEFAULTS[name] if value is None else value for name, value in fields.items()} | {"seed": request.seed}
    return settings | {name: getattr(request, name) for name in POOL_OPTIONS if getattr(request, name) is not None}


def resampled(images: Tensor, resolution: int) -> Tensor:
    """``images`` (uint8, N x 3 x S x S) seen through a ``resolution`` x ``resolution`` camera: averaged down to that
    size and brought back to S x S bilinearly, so finer detail is lost (ImageNet32 is ImageNet downsampled)."""
    size = images.shape[-1]
    small = torch.nn.functional.interpolate(images.float(), size=(resolution, resolution), mode="area")
    back = torch.nn.functional.interpolate(small, size=(size, size), mode="bilinear", align_corners=False)
    return back.round().clamp(0, 255).to(torch.uint8)


def desaturated(images: Tensor, saturation: float) -> Tensor:
    """``images`` (uint8, N x 3 x S x S) with ``saturation`` of their colour: luminance + saturation * (RGB -
    luminance); 0 is a greyscale camera."""
    rgb = images.float()
    luma = torch.einsum("c,nchw->nhw", torch.tensor(LUMA), rgb).unsqueeze(1)
    return (luma + saturation * (rgb - luma)).round().clamp(0, 255).to(torch.uint8)


CAMERAS = {"pretrain_resolution": resampled, "pretrain_saturation": desaturated}  # applied in this order


def _build(s: dict[str, int]) -> DatasetBundle:
    train_ids, open_ids, pretrain_ids = pools(s["seed"], s["num_classes"], s["open_classes"], s["pretrain_classes"])
    parts = {"train": (train_ids, s["train_per_class"], "train"), "test": (train_ids, s["test_per_class"], "test"),
             "open_query": (open_ids, OPEN_QUERY_PER_CLASS, "open_query"),
             "open_gallery": (open_ids, OPEN_GALLERY_PER_CLASS, "open_gallery"),
             "pretrain": (pretrain_ids, s.get("pretrain_per_class", s["train_per_class"]), "train")}  # rendered as train
    layouts = {name: _layout(*part) for name, part in parts.items() if part[0].numel()}
    ids, codes, index, _ = (torch.cat(column) for column in zip(*layouts.values()))
    size = s["image_size"]
    check_images_fit(ids.numel(), size, f"embedded dataset at data.image_size={size}",
                     extra=(noise_bank_bytes(size), "the renderer's noise bank"))
    images = torch.split(_render(s["seed"], ids, codes, index, s["image_size"]), [len(v[0]) for v in layouts.values()])
    splits = {name: ImageArrays(part, layout[3]) for (name, layout), part in zip(layouts.items(), images)}
    for option, camera in CAMERAS.items():  # models pretrained elsewhere: another image source
        if option in s and "pretrain" in splits:
            splits["pretrain"] = ImageArrays(camera(splits["pretrain"].images, s[option]), splits["pretrain"].labels)
    mean, std = channel_stats(splits["train"].images)
    return DatasetBundle("embedded", [class_name(int(c)) for c in train_ids], mean, std, splits)


def load_embedded(request: DatasetRequest) -> DatasetBundle:
    """Render (or load from the cache) the embedded dataset for `request`."""
    settings = _settings(request)
    return cached(request.cache_dir, "embedded", {"render": RENDER_VERSION, **settings}, lambda: _build(settings))
