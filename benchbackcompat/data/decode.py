"""Decoding image files to uint8 arrays.

JPEG and PNG go through torchvision's libjpeg-turbo/libpng decoders (about twice as fast as PIL
here, with identical pixels); anything they cannot read falls back to PIL.
"""
from __future__ import annotations

import io
import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import Tensor

from benchbackcompat.data.memory import check_images_fit
from benchbackcompat.errors import BenchError

try:
    from torchvision.io import ImageReadMode, decode_image, decode_jpeg
except ImportError:  # a torchvision without image decoders (deprecated since 0.29): PIL only
    decode_image = decode_jpeg = None

_CHUNK = 4096
CHUNK_BYTES = 64 * 2**20  # encoded bytes decoded at once: a chunk of files is decoded before the next is read
MAX_PIXELS = 40_000_000  # a decoded image above this (about 120 MB as RGB) is refused: a decompression bomb


def _decode_pil(blob: bytes) -> Tensor:
    with Image.open(io.BytesIO(blob)) as image:
        return torch.from_numpy(np.array(image.convert("RGB"))).permute(2, 0, 1).contiguous()


def _decode_one(blob: bytes, data: Tensor) -> Tensor:
    try:
        return decode_image(data, mode=ImageReadMode.RGB)
    except RuntimeError:  # formats or variants torchvision does not read (e.g. palette PNG, CMYK JPEG)
        return _decode_pil(blob)


def _decode_chunk(blobs: Sequence[bytes]) -> list[Tensor]:
    if decode_jpeg is None:
        return [_decode_pil(b) for b in blobs]
    data = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in blobs]
    jpeg = [i for i, b in enumerate(blobs) if b[:2] == b"\xff\xd8"]
    out: list[Tensor | None] = [None] * len(blobs)
    try:
        for i, image in zip(jpeg, decode_jpeg([data[i] for i in jpeg], mode=ImageReadMode.RGB) if jpeg else []):
            out[i] = image
    except RuntimeError:
        pass  # one bad file: fall back to decoding one by one below
    return [image if image is not None else _decode_one(blobs[i], data[i]) for i, image in enumerate(out)]


def resize_images(images: Tensor, size: int) -> Tensor:
    """Bilinear (antialiased) resize of uint8 N x C x H x W images to size x size."""
    if images.shape[-2:] == (size, size):
        return images
    check_images_fit(images.shape[0], size, f"{images.shape[0]} images resized to data.image_size={size}", images.shape[1])
    out = torch.empty(images.shape[0], images.shape[1], size, size, dtype=torch.uint8)
    for start in range(0, images.shape[0], _CHUNK):
        part = images[start : start + _CHUNK].float()
        out[start : start + _CHUNK] = F.interpolate(part, size=(size, size), mode="bilinear", antialias=True,
                                                    align_corners=False).round_().clamp_(0, 255).to(torch.uint8)
    return out


def check_image(blob: bytes, name: str, source: str) -> None:
    """Read only the header: a file that is not an image, or whose size is above MAX_PIXELS, is refused by name."""
    try:
        with Image.open(io.BytesIO(blob)) as image:
            width, height = image.size
    except Exception as error:  # PIL raises many kinds of errors on bad bytes
        raise BenchError(f"{source}: {name} is not a readable image ({type(error).__name__}: "
                         f"{str(error).splitlines()[0][:80] if str(error) else ''}); remove or replace it") from None
    if width * height > MAX_PIXELS:
        raise BenchError(f"{source}: {name} is {width}x{height} pixels, above the limit of {MAX_PIXELS // 10**6} "
                         "megapixels for decoded images; shrink or remove it")


def _decode_named(blobs: Sequence[bytes], names: Sequence[str], source: str) -> list[Tensor]:
    """Decode one chunk; a file that fails (truncated, not an image) is named in a one-line error."""
    for blob, name in zip(blobs, names):
        check_image(blob, name, source)
    try:
        return _decode_chunk(blobs)
    except Exception:  # find the file that breaks the chunk
        for blob, name in zip(blobs, names):
            try:
                _decode_chunk([blob])
            except Exception as error:
                raise BenchError(f"{source}: cannot decode {name} ({type(error).__name__}: "
                                 f"{str(error).splitlines()[0][:80] if str(error) else 'damaged or truncated'}); "
                                 "remove or replace it") from None
        raise


def decode_stream(files: Iterable[tuple[str, bytes]], image_size: int | None, source: str) -> Tensor:
    """Decode (name, encoded bytes) pairs (JPEG/PNG/...) to uint8 N x 3 x H x W, resized to image_size if set (without
    it all images must share one size); a bad file is named in a one-line error. The pairs are taken as they come:
    each chunk of at most ``_CHUNK`` files or ``CHUNK_BYTES`` bytes is decoded (and resized) before the next is read,
    so the encoded bytes held at once stay bounded however many files there are."""
    images: list[Tensor] = []
    names: list[str] = []
    blobs: list[bytes] = []
    held = 0
    for name, blob in files:
        names.append(name)
        blobs.append(blob)
        held += len(blob)
        if len(blobs) == _CHUNK or held >= CHUNK_BYTES:
            images.extend(_decode_resized(blobs, names, image_size, source))
            names, blobs, held = [], [], 0
    if blobs:
        images.extend(_decode_resized(blobs, names, image_size, source))
    if not images:
        raise BenchError(f"no images found in {source}; check --data-root")
    shapes = {tuple(x.shape) for x in images}
    if len(shapes) > 1:
        raise BenchError(f"images in {source} have different sizes ({', '.join(map(str, sorted(shapes)[:3]))}); "
                         "set the dataset image_size to resize them")
    return torch.stack(images)


def _decode_resized(blobs: Sequence[bytes], names: Sequence[str], image_size: int | None, source: str) -> list[Tensor]:
    with warnings.catch_warnings():  # torchvision 0.29 warns on every call that it prefers torchcodec
        warnings.simplefilter("ignore", DeprecationWarning)
        decoded = _decode_named(blobs, names, source)
    if image_size is not None and len({x.shape for x in decoded}) == 1:
        return list(resize_images(torch.stack(decoded), image_size))
    if image_size is not None:
        return [resize_images(x[None], image_size)[0] for x in decoded]
    return decoded
