"""A network = backbone -> optional linear projection (the feature) -> optional head (the logits)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.models.heads import CosineHead, FixedHead, LinearHead, dsimplex, dsimplex_frobenius, etf
from benchbackcompat.models.registry import create_backbone

HEADS: tuple[str, ...] = ("linear", "cosine", "dsimplex", "etf", "none")


@dataclass
class NetworkOutput:
    features: Tensor
    logits: Tensor | None


class Network(nn.Module):
    """features = projection(backbone(x)) when ``embedding_dim`` is set, else backbone(x);
    logits = head(features) when there is a head."""

    def __init__(
        self, backbone: nn.Module, head: nn.Module | None, embedding_dim: int | None = None, projection_bias: bool = True
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.projection = nn.Linear(backbone.out_dim, embedding_dim, bias=projection_bias) if embedding_dim else None
        self.head = head

    @property
    def feature_dim(self) -> int:
        return self.projection.out_features if self.projection is not None else self.backbone.out_dim

    def embed(self, x: Tensor) -> Tensor:
        """Features only (not normalised)."""
        features = self.backbone(x)
        return self.projection(features) if self.projection is not None else features

    def forward(self, x: Tensor) -> NetworkOutput:
        features = self.embed(x)
        return NetworkOutput(features, self.head(features) if self.head is not None else None)


def build_network(
    backbone: str,
    *,
    num_classes: int,
    head: str = "linear",
    embedding_dim: int | None = None,
    image_size: int = 32,
    in_chans: int = 3,
    head_kwargs: dict[str, Any] | None = None,
    pretrained: bool | str | os.PathLike = False,
    input_size: int | None = None,
) -> Network:
    """Backbone ``backbone`` + projection + head ``head`` (one of HEADS).

    - linear / cosine: head over the features (``head_kwargs``: ``bias`` / ``scale``);
    - dsimplex: fixed K x (K-1) d-Simplex over all ``num_classes`` = K pre-allocated classes; the
      feature is a bias-free projection to K-1 dims (iamcl2r's fc1), so ``embedding_dim`` must be
      None or K-1; ``head_kwargs={"variant": "frobenius"}`` selects the older-code simplex;
    - etf: fixed simplex ETF in ``embedding_dim`` (default K-1, must be >= K-1) dims, bias-free projection;
    - none: no head, logits are None."""
    if head not in HEADS:
        raise UnknownNameError("head", head, HEADS)
    kwargs = dict(head_kwargs or {})
    fixed = _fixed_weight(head, num_classes, embedding_dim, kwargs) if head in ("dsimplex", "etf") else None
    if kwargs and head not in ("linear", "cosine"):
        raise BenchError(f"head {head!r} does not take head_kwargs {sorted(kwargs)}")
    net = create_backbone(backbone, image_size=image_size, in_chans=in_chans, pretrained=pretrained, input_size=input_size)
    if fixed is not None:
        return Network(net, FixedHead(fixed), fixed.shape[1], projection_bias=False)
    if head == "none":
        return Network(net, None, embedding_dim)
    try:
        module = (LinearHead if head == "linear" else CosineHead)(embedding_dim or net.out_dim, num_classes, **kwargs)
    except TypeError as error:
        raise BenchError(f"head {head!r}: bad head_kwargs {sorted(kwargs)} ({error})") from None
    return Network(net, module, embedding_dim)


def _fixed_weight(head: str, num_classes: int, embedding_dim: int | None, kwargs: dict[str, Any]) -> Tensor:
    """The K x d matrix of a fixed head; pops the options it uses from ``kwargs``."""
    if head == "etf":
        return etf(num_classes, embedding_dim)
    if embedding_dim is not None and embedding_dim != num_classes - 1:
        raise BenchError(
            f"head 'dsimplex' with {num_classes} classes fixes the feature size to {num_classes - 1}; "
            f"set embedding_dim to None (or {num_classes - 1}), not {embedding_dim}"
        )
    variants = {"unit": dsimplex, "frobenius": dsimplex_frobenius}
    variant = kwargs.pop("variant", "unit")
    if variant not in variants:
        raise UnknownNameError("d-Simplex variant", variant, variants)
    return variants[variant](num_classes)


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameter elements (buffers such as a fixed head are not parameters)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
