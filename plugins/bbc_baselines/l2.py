"""``l2``: cross-entropy plus the squared distance between the new and the frozen old model's features.

L = CE(W phi_new(x), y) + weight * mean_i || phi_new(x_i)/|phi_new(x_i)| - phi_old(x_i)/|phi_old(x_i)| ||^2,
the L2 baseline of BCT (Shen et al., CVPR'20; openBCT: MSE on normalised features, the new
feature truncated or zero-padded to the old size when they differ).
"""
from __future__ import annotations

import torch.nn.functional as F
from typing import Any, ClassVar

from pydantic import Field
from torch import Tensor

import benchbackcompat
from benchbackcompat.method import Batch, Method, MethodParams, StepContext, old_unit_features
from benchbackcompat.models.network import Network


class L2Params(MethodParams):
    weight: float = Field(1.0, ge=0, description="weight of the feature distance term")

    # HBCT Sec. 5 (seed-002 §3): every baseline gets 10 settings, lambda in [0, 1]
    grid: ClassVar[dict[str, list[Any]]] = {"weight": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]}


def match_size(features: Tensor, size: int) -> Tensor:
    """Truncate or zero-pad features to ``size`` dimensions (openBCT)."""
    if features.shape[1] >= size:
        return features[:, :size]
    return F.pad(features, (0, size - features.shape[1]))


class L2(Method):
    name = "l2"
    description = "cross-entropy + squared L2 distance to the frozen old model's normalised features (BCT's L2 baseline)"
    Params = L2Params

    def loss(self, model: Network, batch: Batch, ctx: StepContext) -> dict[str, Tensor]:
        out = model(batch.images)
        ce = F.cross_entropy(out.logits, batch.labels)
        if ctx.old_model is None:
            return {"loss": ce, "ce": ce}
        old = old_unit_features(ctx, batch.images)
        new = F.normalize(match_size(out.features.float(), old.shape[1]), dim=1)
        distance = (new - old).pow(2).sum(dim=1).mean()
        return {"loss": ce + self.params.weight * distance, "ce": ce, "l2": distance}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [L2]
