"""Device-side augmentation of uint8 image batches: random crop with zero padding, horizontal
flip and per-channel normalisation, vectorised on the images' device (no per-image loop, no PIL)."""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor


def normalise(images: Tensor, mean: Sequence[float], std: Sequence[float]) -> Tensor:
    """uint8 N x C x H x W -> float32 (x / 255 - mean) / std per channel, on the images' device."""
    mean_t = torch.tensor(mean, dtype=torch.float32, device=images.device)[:, None, None]
    std_t = torch.tensor(std, dtype=torch.float32, device=images.device)[:, None, None]
    return (images.to(torch.float32) / 255.0 - mean_t) / std_t


def augment(images: Tensor, *, mean: Sequence[float], std: Sequence[float], generator: torch.Generator,
            pad: int = 4, flip: bool = True) -> Tensor:
    """Random crop (zero-pad by `pad`, crop back to H x W at a per-image offset) and random
    horizontal flip (probability 1/2), then normalise. The random draws are made on the
    generator's device (CPU or the images' device) and moved, so the result is deterministic
    given the generator's state."""
    n, _, height, width = images.shape
    gen_device = generator.device
    rows = torch.arange(height, device=images.device)
    cols = torch.arange(width, device=images.device)
    top = torch.randint(0, 2 * pad + 1, (n,), generator=generator, device=gen_device).to(images.device)
    left = torch.randint(0, 2 * pad + 1, (n,), generator=generator, device=gen_device).to(images.device)
    col_index = left[:, None] + cols[None, :]  # n x W, into the padded width
    if flip:
        mirrored = (torch.rand(n, generator=generator, device=gen_device) < 0.5).to(images.device)
        col_index = torch.where(mirrored[:, None], left[:, None] + (width - 1 - cols)[None, :], col_index)
    padded = F.pad(images, (pad, pad, pad, pad)) if pad else images
    batch = torch.arange(n, device=images.device)[:, None, None, None]
    channel = torch.arange(images.shape[1], device=images.device)[None, :, None, None]
    row_index = (top[:, None] + rows[None, :])[:, None, :, None]
    return normalise(padded[batch, channel, row_index, col_index[:, None, None, :]], mean, std)
