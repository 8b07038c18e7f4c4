"""Vectorised rendering of the embedded dataset's images.

Every per-image random quantity is a counter-based hash of (seed, class id, split, image index,
stream), so an image does not depend on how many other images are rendered with it; pixel noise
is one field of a fixed-size bank drawn once per seed. Shapes are drawn from signed distances
(edges anti-aliased over one pixel) in a local frame shifted, scaled and rotated per image.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

SHAPES = ("circle", "square", "triangle", "star", "ring", "cross", "diamond", "hexagon")
COLOURS = {  # hue in turns; well separated on the colour wheel
    "red": 0 / 360, "orange": 30 / 360, "yellow": 58 / 360, "green": 120 / 360,
    "cyan": 182 / 360, "blue": 228 / 360, "purple": 275 / 360, "magenta": 318 / 360,
}
BACKGROUNDS = ("plain", "hstripes", "vstripes", "diagonal", "antidiagonal", "checker", "dots", "rings")

_M32 = 0xFFFFFFFF
NOISE_BANK = 1024  # noise fields shared by all images, one picked per image
_NOISE_KEY, _IMAGE_KEY = 0x6E6F6973, 0x696D6167
_STREAMS = 108  # random numbers per image: 0..99 for the image, 100.. for its background


def _mul32(x: Tensor, c: int) -> Tensor:
    """(x * c) mod 2**32 for 32-bit x without int64 overflow (split into 16-bit halves)."""
    return (x * (c & 0xFFFF) + (((x * (c >> 16)) & 0xFFFF) << 16)) & _M32


def _mix32(x: Tensor) -> Tensor:
    """A 32-bit integer finaliser (the "lowbias32" xor-shift-multiply constants)."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def hash_keys(*keys: Tensor | int) -> Tensor:
    """A 32-bit hash (int64 tensor, broadcast over the keys) of a sequence of integer keys."""
    h = torch.tensor(0x2545F491, dtype=torch.int64)
    for key in keys:
        key = torch.as_tensor(key, dtype=torch.int64)
        h = _mix32(h ^ (key & _M32) ^ ((key >> 32) & _M32))
    return h


def unit(h: Tensor) -> Tensor:
    """Uniform floats in [0, 1) from 32-bit hashes (24 bits of resolution)."""
    return (h >> 8).to(torch.float32) * 2.0**-24


def _soft_square(x: Tensor) -> Tensor:
    """A square wave with softened edges, in [0, 1], from a sine phase."""
    return (torch.sin(x).mul_(1.5).clamp_(-1.0, 1.0) + 1.0) * 0.5


# ---- shapes: signed distance in the shape's local frame (unit "radius"), negative inside ----

def _polygon(u: Tensor, v: Tensor, sides: int, inradius: float, offset: float) -> Tensor:
    angles = [offset + 2 * math.pi * k / sides for k in range(sides)]
    return torch.stack([u * math.cos(a) + v * math.sin(a) for a in angles]).amax(0) - inradius


def _star(u: Tensor, v: Tensor) -> Tensor:
    radius = torch.sqrt(u * u + v * v)
    phase = (torch.atan2(v, u) + math.pi / 2) / (2 * math.pi / 5)  # a tip points up
    tip = (phase - torch.floor(phase) - 0.5).abs() * 2  # 1 at the tips, 0 between them
    return (radius - (0.42 + 0.58 * tip)) * 0.7


def _box(u: Tensor, v: Tensor, half_u: float, half_v: float) -> Tensor:
    return torch.maximum(u.abs() - half_u, v.abs() - half_v)


_SDF: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "circle": lambda u, v: torch.sqrt(u * u + v * v) - 1.0,
    "square": lambda u, v: _box(u, v, 0.82, 0.82),
    "triangle": lambda u, v: _polygon(u, v, 3, 0.55, math.pi / 2),  # apex up (y points down)
    "star": _star,
    "ring": lambda u, v: (torch.sqrt(u * u + v * v) - 0.72).abs() - 0.28,
    "cross": lambda u, v: torch.minimum(_box(u, v, 1.0, 0.3), _box(u, v, 0.3, 1.0)),
    "diamond": lambda u, v: (u.abs() + 0.55 * v.abs() - 0.58) / math.sqrt(1 + 0.55**2),
    "hexagon": lambda u, v: _polygon(u, v, 6, 0.88, 0.0),
}


def _grid(size: int) -> Tensor:
    """Pixel-centre coordinates in [0, 1]."""
    return (torch.arange(size, dtype=torch.float32) + 0.5) / size


def _shape_alpha(kind: Tensor, cx: Tensor, cy: Tensor, radius: Tensor, angle: Tensor,
                 size: int) -> tuple[Tensor, Tensor, Tensor]:
    """Coverage (n x S x S) of shapes of type index `kind` and the local coordinates u, v."""
    grid = _grid(size)
    dx = (grid[None, None, :] - cx[:, None, None]) / radius[:, None, None]
    dy = (grid[None, :, None] - cy[:, None, None]) / radius[:, None, None]
    cos, sin = torch.cos(angle)[:, None, None], torch.sin(angle)[:, None, None]
    u, v = cos * dx + sin * dy, cos * dy - sin * dx
    dist = torch.empty_like(u)
    for index, name in enumerate(SHAPES):
        chosen = (kind == index).nonzero().squeeze(1)
        if chosen.numel() == kind.numel():
            dist = _SDF[name](u, v)
        elif chosen.numel():
            dist[chosen] = _SDF[name](u[chosen], v[chosen])
    alpha = (0.5 - dist * (radius * size)[:, None, None]).clamp_(0.0, 1.0)
    return alpha, u, v


_ORIENTATION = {"hstripes": 90.0, "diagonal": 45.0, "antidiagonal": 135.0}  # degrees; others 0


def _pattern(name: str, r: Callable[[int], Tensor], size: int) -> Tensor:
    """Pattern value in [0, 1] (n x S x S) of background `name` for n images with randoms r."""
    grid = _grid(size)
    x, y = grid[None, None, :], grid[None, :, None]
    theta = math.radians(_ORIENTATION.get(name, 0.0)) + (r(0) - 0.5) * math.radians(20)  # +-10 degrees
    cos, sin = torch.cos(theta)[:, None, None], torch.sin(theta)[:, None, None]
    freq = (3.0 + 2.0 * r(1))[:, None, None]  # cycles per image
    phase1, phase2 = r(2)[:, None, None], r(3)[:, None, None]  # in cycles
    if name == "plain":  # a faint gradient in a random direction
        angle = 2 * math.pi * r(4)[:, None, None]
        return 0.5 + 0.3 * ((x - 0.5) * torch.cos(angle) + (y - 0.5) * torch.sin(angle))
    along = x * cos + y * sin
    if name in _ORIENTATION or name == "vstripes":
        return _soft_square(2 * math.pi * (freq * along + phase1))
    across = y * cos - x * sin
    if name == "checker":
        f = 0.6 * freq
        a = 2 * _soft_square(2 * math.pi * (f * along + phase1)) - 1
        b = 2 * _soft_square(2 * math.pi * (f * across + phase2)) - 1
        return 0.5 + 0.5 * a * b
    if name == "dots":
        fa, fb = freq * along + phase1, freq * across + phase2
        da, db = fa - torch.floor(fa) - 0.5, fb - torch.floor(fb) - 0.5
        dot_px = torch.sqrt(da * da + db * db) * (size / freq)
        return ((0.22 + 0.1 * r(5)[:, None, None]) * (size / freq) - dot_px + 0.5).clamp_(0.0, 1.0)
    # rings around a random centre
    cx, cy = r(6)[:, None, None], r(7)[:, None, None]
    return _soft_square(2 * math.pi * (freq * torch.sqrt((x - cx) ** 2 + (y - cy) ** 2) + phase1))


def _background(kind: Tensor, r: Callable[[int], Tensor], size: int) -> Tensor:
    """Pattern value in [0, 1] (n x S x S) for background type index `kind`."""
    pattern = torch.empty(kind.shape[0], size, size)
    for index, name in enumerate(BACKGROUNDS):
        chosen = (kind == index).nonzero().squeeze(1)
        if chosen.numel() == kind.numel():
            return _pattern(name, r, size)
        if chosen.numel():
            pattern[chosen] = _pattern(name, lambda stream: r(stream)[chosen], size)
    return pattern


def _hsv_to_rgb(h: Tensor, s: Tensor, v: Tensor) -> Tensor:
    """n hues (turns), saturations, values -> n x 3 RGB in [0, 1]."""
    k = (torch.tensor([5.0, 3.0, 1.0])[None, :] + h[:, None] * 6.0) % 6.0
    return v[:, None] - v[:, None] * s[:, None] * torch.minimum(k, 4.0 - k).clamp(0.0, 1.0)


def noise_bank_bytes(size: int) -> int:
    """The memory :func:`noise_bank` takes at its peak: two float32 draws and their sum."""
    return 3 * NOISE_BANK * 3 * size * size * 4


def noise_bank(seed: int, size: int) -> Tensor:
    """NOISE_BANK fields of triangular noise in [-1, 1] (bank x 3 x S x S), shared by all images.
    Drawn from a seeded torch.Generator: its size is fixed, so it never depends on the request."""
    generator = torch.Generator().manual_seed(int(hash_keys(seed, _NOISE_KEY)))
    noise = torch.rand(2, NOISE_BANK, 3, size, size, generator=generator)
    return noise[0] + noise[1] - 1.0


def render(seed: int, shape: Tensor, hue: Tensor, background: Tensor, class_ids: Tensor, split: Tensor | int,
           indices: Tensor, size: int, bank: Tensor | None = None) -> Tensor:
    """Render n images (uint8, n x 3 x S x S). Per image: the class's shape index, hue (turns)
    and background index, with its (class id, split, index) keying all random variation.
    `bank` is noise_bank(seed, size), passed in to reuse it across calls."""
    key = hash_keys(seed, _IMAGE_KEY, class_ids, split, indices)
    randoms = unit(hash_keys(key[:, None], torch.arange(_STREAMS)[None, :]))  # n x streams, in [0, 1)

    def r(stream: int) -> Tensor:
        return randoms[:, stream]

    # a global gain/offset per image, applied to the colours (compositing is affine) in 0..255 units
    gain, offset = 0.8 + 0.3 * r(30), (r(31) - 0.5) * 0.16

    def tone(rgb: Tensor, m: Tensor | slice = slice(None)) -> Tensor:
        return ((rgb - 0.5) * gain[m, None] + 0.5 + offset[m, None]) * 255.0 + 0.5  # +0.5: round on truncation

    # background: two low-saturation colours mixed by the pattern
    pattern = _background(background, lambda k: r(100 + k), size)
    grey = 0.15 + 0.7 * r(1)
    contrast = (0.15 + 0.35 * r(2)) * torch.where(r(3) < 0.5, -1.0, 1.0)
    tint = (torch.stack([r(4), r(5), r(6)], 1) - 0.5) * 0.16
    low = tone((grey[:, None] + tint).clamp(0.0, 1.0))
    high = tone((grey + contrast)[:, None].clamp(0.0, 1.0) + tint)
    image = torch.addcmul(low[:, :, None, None], (high - low)[:, :, None, None], pattern[:, None])

    # a small distractor shape of random type and colour, behind the class's shape
    chosen = (r(10) < 0.6).nonzero().squeeze(1)
    if chosen.numel():
        def d(stream: int) -> Tensor:
            return r(stream)[chosen]
        kind = (d(11) * len(SHAPES)).long().clamp_max(len(SHAPES) - 1)
        d_alpha, _, _ = _shape_alpha(kind, 0.1 + 0.8 * d(12), 0.1 + 0.8 * d(13), 0.08 + 0.06 * d(14),
                                     2 * math.pi * d(15), size)
        d_colour = tone(_hsv_to_rgb(d(16), 0.5 + 0.5 * d(17), 0.5 + 0.5 * d(18)), chosen)
        d_colour = d_colour[:, :, None, None].expand(-1, -1, size, size)
        image[chosen] = torch.lerp(image[chosen], d_colour, d_alpha[:, None])

    # the class's shape: random position, scale, rotation, colour jitter and shading
    alpha, u, v = _shape_alpha(shape, 0.28 + 0.44 * r(20), 0.28 + 0.44 * r(21), 0.2 + 0.12 * r(22),
                               (r(23) - 0.5) * math.radians(50), size)
    colour = _hsv_to_rgb(hue + (r(24) - 0.5) * 0.04, 0.65 + 0.35 * r(25), 0.6 + 0.4 * r(26))
    light = 2 * math.pi * r(27)
    shade = (u * torch.cos(light)[:, None, None]).add_(v * torch.sin(light)[:, None, None]).mul_(0.15)
    base = tone(colour)  # colour * (1 + shade), toned: tone(colour) + colour * gain * 255 * shade
    scale = colour * gain[:, None] * 255.0
    foreground = torch.addcmul(base[:, :, None, None], scale[:, :, None, None], shade[:, None])
    image.lerp_(foreground, alpha[:, None])

    # pixel noise: a field of the shared bank, with a per-image amplitude
    bank = noise_bank(seed, size) if bank is None else bank
    noise = bank.index_select(0, (r(32) * NOISE_BANK).long().clamp_max(NOISE_BANK - 1))
    image.addcmul_(noise, (255.0 * (0.03 + 0.09 * r(35)))[:, None, None, None])
    return image.clamp_(0.0, 255.0).to(torch.uint8)
