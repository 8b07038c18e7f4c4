"""Vectorised rendering of the embedded dataset's images.

Every random quantity is a counter-based hash of (seed, class id, split, image index, stream),
so an image does not depend on how many other images are rendered with it, nor on torch's RNG.
Shapes are drawn from signed distances (edges anti-aliased over one pixel) in a local frame
that is shifted, scaled and rotated per image.
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
_NOISE_BANK = 256  # noise fields shared by all images, each picked with a random cyclic shift
_NOISE_KEY, _IMAGE_KEY = 0x6E6F6973, 0x696D6167


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


def _shape_alpha(kind: Tensor, cx: Tensor, cy: Tensor, radius: Tensor, angle: Tensor, size: int) -> tuple[Tensor, Tensor, Tensor]:
    """Coverage (n x S x S) of shapes of type index `kind` and the local coordinates u, v."""
    grid = (torch.arange(size, dtype=torch.float32) + 0.5) / size
    dx = (grid[None, None, :] - cx[:, None, None]) / radius[:, None, None]
    dy = (grid[None, :, None] - cy[:, None, None]) / radius[:, None, None]
    cos, sin = torch.cos(angle)[:, None, None], torch.sin(angle)[:, None, None]
    u, v = cos * dx + sin * dy, cos * dy - sin * dx
    dist = torch.empty_like(u)
    for index, name in enumerate(SHAPES):
        chosen = (kind == index).nonzero().squeeze(1)
        if chosen.numel():
            dist[chosen] = _SDF[name](u[chosen], v[chosen])
    alpha = (0.5 - dist * (radius * size)[:, None, None]).clamp_(0.0, 1.0)
    return alpha, u, v


def _background(kind: Tensor, r: Callable[[int], Tensor], size: int) -> Tensor:
    """Pattern value in [0, 1] (n x S x S) for background type index `kind`."""
    n = kind.shape[0]
    grid = (torch.arange(size, dtype=torch.float32) + 0.5) / size
    x, y = grid[None, None, :].expand(n, size, size), grid[None, :, None].expand(n, size, size)
    base = torch.tensor([0.0, 90.0, 0.0, 45.0, 135.0, 0.0, 0.0, 0.0])[kind] * math.pi / 180
    theta = (base + (r(0) - 0.5) * (20 * math.pi / 180))[:, None, None]  # +-10 degrees
    along = x * torch.cos(theta) + y * torch.sin(theta)
    across = y * torch.cos(theta) - x * torch.sin(theta)
    freq = (3.0 + 2.0 * r(1))[:, None, None]  # cycles per image
    phase1, phase2 = (2 * math.pi * r(2))[:, None, None], (2 * math.pi * r(3))[:, None, None]
    pattern = torch.empty(n, size, size)
    for index, name in enumerate(BACKGROUNDS):
        m = (kind == index).nonzero().squeeze(1)
        if not m.numel():
            continue
        a, b, f, p1, p2 = along[m], across[m], freq[m], phase1[m], phase2[m]
        if name == "plain":  # a faint gradient in a random direction
            g = 2 * math.pi * r(4)[m][:, None, None]
            value = 0.5 + 0.3 * ((x[m] - 0.5) * torch.cos(g) + (y[m] - 0.5) * torch.sin(g))
        elif name in ("hstripes", "vstripes", "diagonal", "antidiagonal"):
            value = _soft_square(2 * math.pi * f * a + p1)
        elif name == "checker":
            f = f * 0.6
            value = 0.5 + 0.5 * (2 * _soft_square(2 * math.pi * f * a + p1) - 1) * (2 * _soft_square(2 * math.pi * f * b + p2) - 1)
        elif name == "dots":
            fa, fb = f * a + p1 / (2 * math.pi), f * b + p2 / (2 * math.pi)
            da, db = fa - torch.floor(fa) - 0.5, fb - torch.floor(fb) - 0.5
            dot_px = torch.sqrt(da * da + db * db) / f * size
            value = ((0.22 + 0.1 * r(5)[m])[:, None, None] * size / f - dot_px + 0.5).clamp(0.0, 1.0)
        else:  # rings around a random centre
            cx, cy = r(6)[m][:, None, None], r(7)[m][:, None, None]
            value = _soft_square(2 * math.pi * f * torch.sqrt((x[m] - cx) ** 2 + (y[m] - cy) ** 2) + p1)
        pattern[m] = value
    return pattern


def _hsv_to_rgb(h: Tensor, s: Tensor, v: Tensor) -> Tensor:
    """n hues (turns), saturations, values -> n x 3 RGB in [0, 1]."""
    k = (torch.tensor([5.0, 3.0, 1.0])[None, :] + h[:, None] * 6.0) % 6.0
    return v[:, None] - v[:, None] * s[:, None] * torch.minimum(k, 4.0 - k).clamp(0.0, 1.0)


def noise_bank(seed: int, size: int) -> Tensor:
    """_NOISE_BANK fields of triangular noise in [-1, 1] (bank x 3 x S x S)."""
    cells = torch.arange(_NOISE_BANK * 3 * size * size)
    noise = unit(hash_keys(seed, _NOISE_KEY, 0, cells)) + unit(hash_keys(seed, _NOISE_KEY, 1, cells)) - 1.0
    return noise.view(_NOISE_BANK, 3, size, size)


def render(seed: int, shape: Tensor, hue: Tensor, background: Tensor, class_ids: Tensor, split: int,
           indices: Tensor, size: int, noise_bank: Tensor | None = None) -> Tensor:
    """Render n images (uint8, n x 3 x S x S). Per image: the class's shape index, hue (turns)
    and background index, with its (class id, split, index) keying all random variation."""
    key = hash_keys(seed, _IMAGE_KEY, class_ids, split, indices)

    def r(stream: int) -> Tensor:
        return unit(hash_keys(key, stream))

    # background: two low-saturation colours mixed by the pattern
    pattern = _background(background, lambda k: r(100 + k), size)
    grey = 0.15 + 0.7 * r(1)
    contrast = (0.15 + 0.35 * r(2)) * torch.where(r(3) < 0.5, -1.0, 1.0)
    tint = (torch.stack([r(4), r(5), r(6)], 1) - 0.5) * 0.16
    low = (grey[:, None] + tint).clamp(0.0, 1.0)
    high = (grey + contrast)[:, None].clamp(0.0, 1.0) + tint
    image = low[:, :, None, None] + (high - low)[:, :, None, None] * pattern[:, None]

    # a small distractor shape of random type and colour (behind the main shape)
    has_distractor = (r(10) < 0.6).float()
    d_alpha, _, _ = _shape_alpha((r(11) * len(SHAPES)).long().clamp_max(len(SHAPES) - 1),
                                 0.1 + 0.8 * r(12), 0.1 + 0.8 * r(13), 0.08 + 0.06 * r(14),
                                 2 * math.pi * r(15), size)
    d_colour = _hsv_to_rgb(r(16), 0.5 + 0.5 * r(17), 0.5 + 0.5 * r(18))
    d_alpha = d_alpha * has_distractor[:, None, None]
    image = image + (d_colour[:, :, None, None] - image) * d_alpha[:, None]

    # the class's shape: random position, scale, rotation, colour jitter and shading
    alpha, u, v = _shape_alpha(shape, 0.28 + 0.44 * r(20), 0.28 + 0.44 * r(21), 0.2 + 0.12 * r(22),
                               (r(23) - 0.5) * (50 * math.pi / 180), size)
    colour = _hsv_to_rgb(hue + (r(24) - 0.5) * 0.04, 0.65 + 0.35 * r(25), 0.6 + 0.4 * r(26))
    light = 2 * math.pi * r(27)
    shade = 1.0 + 0.15 * (u * torch.cos(light)[:, None, None] + v * torch.sin(light)[:, None, None])
    foreground = colour[:, :, None, None] * shade[:, None]
    image = image + (foreground - image) * alpha[:, None]

    # global brightness/contrast and pixel noise (a cyclically shifted field of a shared bank)
    gain, offset = 0.8 + 0.3 * r(30), (r(31) - 0.5) * 0.16
    image = (image - 0.5) * gain[:, None, None, None] + 0.5 + offset[:, None, None, None]
    bank = noise_bank(seed, size) if noise_bank is None else noise_bank
    pick = (r(32) * _NOISE_BANK).long().clamp_max(_NOISE_BANK - 1)
    rows = (torch.arange(size)[None, :] + (r(33) * size).long()[:, None]) % size
    cols = (torch.arange(size)[None, :] + (r(34) * size).long()[:, None]) % size
    noise = bank[pick[:, None, None, None], torch.arange(3)[None, :, None, None], rows[:, None, :, None], cols[:, None, None, :]]
    image = image + noise * (0.03 + 0.09 * r(35))[:, None, None, None]
    return image.clamp_(0.0, 1.0).mul_(255.0).round_().to(torch.uint8)
