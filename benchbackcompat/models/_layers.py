"""Building blocks shared by the backbone families: initialisation and squeeze-excitation."""
from __future__ import annotations

from torch import Tensor, nn


def init_weights(module: nn.Module) -> None:
    """Kaiming-normal convolutions (fan-out, ReLU gain; He et al. 2015), unit/zero norm layers,
    Kaiming-normal linear layers (fan-in) with zero bias."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)


class SqueezeExcite(nn.Module):
    """Channel gating x * sigmoid(W2 relu(W1 avgpool(x))) of Hu et al. (SENet), with 1x1 convolutions."""

    def __init__(self, channels: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Conv2d(channels, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, channels, 1)

    def forward(self, x: Tensor) -> Tensor:
        w = x.mean((2, 3), keepdim=True)
        return x * self.fc2(self.fc1(w).relu()).sigmoid()
