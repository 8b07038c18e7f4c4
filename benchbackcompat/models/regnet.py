"""RegNetY (Radosavovic et al., CVPR'20) for 32x32 inputs: residual bottleneck blocks with group
convolutions and squeeze-excitation; the stem is a 3x3 stride-1 conv-BN-ReLU (64 channels) and the
first two stages keep the resolution (strides 1, 1, 2, 2), the CIFAR layout of the RegNetY_400MF used
by IAM-CL2R."""
from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

from benchbackcompat.models._layers import SqueezeExcite, init_weights


class YBlock(nn.Module):
    """1x1 conv, grouped 3x3 conv (stride s), SE (width round(se_ratio * w_in)), 1x1 conv, each with
    BN; ReLU after the first two and after the residual sum; 1x1 conv-BN projection shortcut on a
    shape change."""

    def __init__(self, w_in: int, w_out: int, stride: int, group_width: int, bottleneck_ratio: float, se_ratio: float) -> None:
        super().__init__()
        w_b = int(round(w_out * bottleneck_ratio))
        self.conv1 = nn.Conv2d(w_in, w_b, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(w_b)
        self.conv2 = nn.Conv2d(w_b, w_b, 3, stride, 1, groups=w_b // group_width, bias=False)
        self.bn2 = nn.BatchNorm2d(w_b)
        self.se = SqueezeExcite(w_b, int(round(w_in * se_ratio))) if se_ratio > 0 else nn.Identity()
        self.conv3 = nn.Conv2d(w_b, w_out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(w_out)
        self.shortcut = (
            nn.Sequential(nn.Conv2d(w_in, w_out, 1, stride, bias=False), nn.BatchNorm2d(w_out))
            if stride != 1 or w_in != w_out
            else nn.Identity()
        )

    def forward(self, x: Tensor) -> Tensor:
        out = self.bn1(self.conv1(x)).relu()
        out = self.se(self.bn2(self.conv2(out)).relu())
        out = self.bn3(self.conv3(out))
        return (out + self.shortcut(x)).relu()


class RegNet(nn.Module):
    """Stem, stages of Y blocks (stride on each stage's first block), global average pool."""

    def __init__(
        self,
        depths: Sequence[int],
        widths: Sequence[int],
        strides: Sequence[int],
        *,
        group_width: int,
        bottleneck_ratio: float = 1.0,
        se_ratio: float = 0.25,
        stem_width: int = 64,
        in_chans: int = 3,
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_chans, stem_width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem_width)
        channels, stages = stem_width, []
        for depth, width, stride in zip(depths, widths, strides, strict=True):
            blocks = []
            for block in range(depth):
                blocks.append(YBlock(channels, width, stride if block == 0 else 1, group_width, bottleneck_ratio, se_ratio))
                channels = width
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.out_dim = channels
        init_weights(self)

    def forward(self, x: Tensor) -> Tensor:
        return self.stages(self.bn1(self.conv1(x)).relu()).mean((2, 3))


def regnety400mf(*, in_chans: int = 3, image_size: int = 32) -> RegNet:
    """RegNetY-400MF: depths [1, 2, 7, 12], widths [32, 64, 160, 384], group width 16, SE 0.25; 384-d."""
    return RegNet([1, 2, 7, 12], [32, 64, 160, 384], [1, 1, 2, 2], group_width=16, se_ratio=0.25, in_chans=in_chans)
