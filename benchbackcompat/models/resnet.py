"""ResNets of He et al. (CVPR'16): ResNet-18 with a CIFAR (3x3, stride 1) or ImageNet (7x7 stride 2 +
max-pool) stem, and the CIFAR ResNet-20/32 (3 stages of 16/32/64 channels, parameter-free
zero-padding shortcuts, "option A"). Parameter names follow torchvision (conv1, bn1, layer1..,
downsample), so torchvision ResNet-18 weights load into ``resnet18-imagenet``."""
from __future__ import annotations

from collections.abc import Sequence

import torch.nn.functional as F
from torch import Tensor, nn

from benchbackcompat.models._layers import init_weights


class PadShortcut(nn.Module):
    """Option-A shortcut: subsample by ``stride`` and zero-pad the new channels (no parameters)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        extra = out_channels - in_channels
        self.pad = (extra // 2, extra - extra // 2)

    def forward(self, x: Tensor) -> Tensor:
        x = x[:, :, :: self.stride, :: self.stride]
        return F.pad(x, (0, 0, 0, 0, *self.pad))


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers with an identity (or ``downsample``) shortcut, ReLU after the sum."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, downsample: nn.Module | None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = downsample

    def forward(self, x: Tensor) -> Tensor:
        out = self.bn1(self.conv1(x)).relu()
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return (out + identity).relu()


def _shortcut(kind: str, in_channels: int, out_channels: int, stride: int) -> nn.Module | None:
    if stride == 1 and in_channels == out_channels:
        return None
    if kind == "pad":
        return PadShortcut(in_channels, out_channels, stride)
    return nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride, bias=False), nn.BatchNorm2d(out_channels))


class ResNet(nn.Module):
    """Stem, stages of basic blocks (the first at stride 1, the others at stride 2), global average pool.

    ``stem``: "cifar" (3x3 stride 1) or "imagenet" (7x7 stride 2 + 3x3 stride-2 max-pool);
    ``shortcut``: "conv" (1x1 conv + BN projection, option B) or "pad" (option A)."""

    def __init__(
        self,
        depths: Sequence[int],
        widths: Sequence[int],
        *,
        stem: str = "cifar",
        shortcut: str = "conv",
        in_chans: int = 3,
    ) -> None:
        super().__init__()
        if stem == "imagenet":
            self.conv1 = nn.Conv2d(in_chans, widths[0], 7, 2, 3, bias=False)
            self.maxpool: nn.Module = nn.MaxPool2d(3, 2, 1)
        else:
            self.conv1 = nn.Conv2d(in_chans, widths[0], 3, 1, 1, bias=False)
            self.maxpool = nn.Identity()
        self.bn1 = nn.BatchNorm2d(widths[0])
        channels = widths[0]
        for index, (depth, width) in enumerate(zip(depths, widths, strict=True)):
            blocks = []
            for block in range(depth):
                stride = 2 if index > 0 and block == 0 else 1
                blocks.append(BasicBlock(channels, width, stride, _shortcut(shortcut, channels, width, stride)))
                channels = width
            self.add_module(f"layer{index + 1}", nn.Sequential(*blocks))
        self.num_stages = len(depths)
        self.out_dim = channels
        init_weights(self)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.bn1(self.conv1(x)).relu())
        for index in range(self.num_stages):
            x = getattr(self, f"layer{index + 1}")(x)
        return x.mean((2, 3))


def resnet18(*, in_chans: int = 3, image_size: int = 32) -> ResNet:
    """ResNet-18 with the CIFAR stem; 512-d features."""
    return ResNet([2, 2, 2, 2], [64, 128, 256, 512], stem="cifar", in_chans=in_chans)


def resnet18_imagenet(*, in_chans: int = 3, image_size: int = 32) -> ResNet:
    """ResNet-18 with the ImageNet stem, as iamcl2r uses even on 32x32 inputs; 512-d features."""
    return ResNet([2, 2, 2, 2], [64, 128, 256, 512], stem="imagenet", in_chans=in_chans)


def resnet20(*, in_chans: int = 3, image_size: int = 32) -> ResNet:
    """CIFAR ResNet-20 (3 x 3 blocks, 16/32/64 channels, option-A shortcuts); 64-d features."""
    return ResNet([3, 3, 3], [16, 32, 64], stem="cifar", shortcut="pad", in_chans=in_chans)


def resnet32(*, in_chans: int = 3, image_size: int = 32) -> ResNet:
    """CIFAR ResNet-32 (3 x 5 blocks, 16/32/64 channels, option-A shortcuts); 64-d features."""
    return ResNet([5, 5, 5], [16, 32, 64], stem="cifar", shortcut="pad", in_chans=in_chans)
