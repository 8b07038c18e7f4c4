"""Tiny plain ConvNets for the CPU quick preset: conv3x3-BN-ReLU blocks, a 2x2 max-pool after every
block but the last, global average pool. ``convnet-s`` (32/64/128, 128-d) and ``convnet-m``
(48/96/192, 192-d) are a fast old/new architecture pair."""
from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

from benchbackcompat.models._layers import init_weights


class ConvNet(nn.Module):
    def __init__(self, widths: Sequence[int], *, in_chans: int = 3) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = in_chans
        for index, width in enumerate(widths):
            layers += [nn.Conv2d(channels, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
            if index < len(widths) - 1:
                layers.append(nn.MaxPool2d(2))
            channels = width
        self.features = nn.Sequential(*layers)
        self.out_dim = channels
        init_weights(self)

    def forward(self, x: Tensor) -> Tensor:
        return self.features(x).mean((2, 3))


def convnet_s(*, in_chans: int = 3, image_size: int = 32) -> ConvNet:
    """3 conv blocks, 32/64/128 channels; 128-d features."""
    return ConvNet([32, 64, 128], in_chans=in_chans)


def convnet_m(*, in_chans: int = 3, image_size: int = 32) -> ConvNet:
    """3 conv blocks, 48/96/192 channels; 192-d features."""
    return ConvNet([48, 96, 192], in_chans=in_chans)
