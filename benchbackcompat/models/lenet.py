"""LeNet++ of Wen et al. (ECCV'16, centre loss): three pairs of 5x5 convolutions (32-32, 64-64,
128-128, padding 2), each conv followed by BN and a per-channel PReLU, 2x2 max-pool after each pair,
then a linear layer to ``out_dim`` (the paper's toy feature is 2-d). The flattened size depends on
the input, so ``image_size`` fixes it (28 -> 3x3, 32 -> 4x4, 64 -> 8x8). BN is our addition."""
from __future__ import annotations

from torch import Tensor, nn

from benchbackcompat.errors import BenchError
from benchbackcompat.models._layers import init_weights


def _conv(in_channels: int, out_channels: int) -> list[nn.Module]:
    return [nn.Conv2d(in_channels, out_channels, 5, 1, 2, bias=False), nn.BatchNorm2d(out_channels), nn.PReLU(out_channels)]


class LeNetPP(nn.Module):
    def __init__(self, *, in_chans: int = 3, image_size: int = 32, out_dim: int = 128, widths: tuple[int, ...] = (32, 64, 128)) -> None:
        super().__init__()
        side = image_size // 2 ** len(widths)
        if side < 1:
            raise BenchError(f"lenetpp: image_size {image_size} is too small for {len(widths)} max-pools; use at least {2 ** len(widths)}")
        layers: list[nn.Module] = []
        channels = in_chans
        for width in widths:
            layers += [*_conv(channels, width), *_conv(width, width), nn.MaxPool2d(2)]
            channels = width
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(channels * side * side, out_dim)
        self.out_dim = out_dim
        init_weights(self)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.features(x).flatten(1))


def lenetpp(*, in_chans: int = 3, image_size: int = 32, out_dim: int = 128) -> LeNetPP:
    """LeNet++ (Wen et al.) with ``out_dim``-d features (128 by default; 2 for the paper's toy)."""
    return LeNetPP(in_chans=in_chans, image_size=image_size, out_dim=out_dim)
