"""SENet-18 for 32x32 inputs: a pre-activation ResNet-18 (He et al., ECCV'16) whose blocks end in
squeeze-excitation (Hu et al., CVPR'18, reduction 16), with a 3x3 stride-1 conv-BN-ReLU stem and no
BN after the last block, the layout of the CIFAR SENet-18 used by CoReS and IAM-CL2R."""
from __future__ import annotations

from torch import Tensor, nn

from benchbackcompat.models._layers import SqueezeExcite, init_weights


class PreActSEBlock(nn.Module):
    """BN-ReLU-conv3x3, BN-ReLU-conv3x3, SE gate, plus the shortcut (a 1x1 conv of the
    pre-activated input when the shape changes, else the raw input)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, reduction: int = 16) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.se = SqueezeExcite(out_channels, out_channels // reduction)
        needs_projection = stride != 1 or in_channels != out_channels
        self.shortcut = nn.Conv2d(in_channels, out_channels, 1, stride, bias=False) if needs_projection else None

    def forward(self, x: Tensor) -> Tensor:
        pre = self.bn1(x).relu()
        identity = x if self.shortcut is None else self.shortcut(pre)
        out = self.conv1(pre)
        out = self.conv2(self.bn2(out).relu())
        return self.se(out) + identity


class SENet(nn.Module):
    """Stem, four stages of pre-activation SE blocks (strides 1, 2, 2, 2), global average pool."""

    def __init__(self, depths: tuple[int, ...] = (2, 2, 2, 2), widths: tuple[int, ...] = (64, 128, 256, 512), in_chans: int = 3) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_chans, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        channels, stages = widths[0], []
        for index, (depth, width) in enumerate(zip(depths, widths, strict=True)):
            blocks = []
            for block in range(depth):
                blocks.append(PreActSEBlock(channels, width, 2 if index > 0 and block == 0 else 1))
                channels = width
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.out_dim = channels
        init_weights(self)

    def forward(self, x: Tensor) -> Tensor:
        return self.stages(self.bn1(self.conv1(x)).relu()).mean((2, 3))


def senet18(*, in_chans: int = 3, image_size: int = 32) -> SENet:
    """SENet-18 (PreAct blocks [2, 2, 2, 2], 64..512 channels); 512-d features."""
    return SENet(in_chans=in_chans)
