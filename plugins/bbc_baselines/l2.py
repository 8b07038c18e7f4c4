"""``l2``: the feature-distance baseline of BCT and CoReS, three readings (``objective``).

- ``cores`` (default; CoReS Sec. 5, the paper that benchmarks it): L = CE(W phi_new(x), y) + weight *
  L_dist, L_dist = mean over the old training data of ||phi_new(x) - phi_old(x)||_2 (Euclidean, not
  squared). The old training data are taken as the samples of the classes the old model knew (the data
  of ext-data's old model are not tracked); features are L2-normalised (the retrieval feature) first.
- ``openbct``: openBCT's ``--l2`` mode, which CoReS names as its baselines' source: the MSE between the
  new and old features alone (no cross-entropy), mean over elements, over every sample; when the sizes
  differ the larger one is truncated to the smaller and L2-normalised, otherwise neither is normalised.
- ``squared``: our first reading, CE + weight * mean_i ||n_i - o_i||^2 over every sample, n and o the
  L2-normalised features (the new one truncated or zero-padded to the old size).
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

import benchbackcompat
from benchbackcompat.method import Batch, CompatibilityMethod, Method, MethodParams, StepContext, match_size, old_unit_features
from benchbackcompat.models.network import Network

Objective = Literal["cores", "openbct", "squared"]


class L2Params(MethodParams):
    weight: float = Field(1.0, ge=0, description="weight of the feature distance term (cores, squared)")
    objective: Objective = Field(
        "cores", description="cores: CE + weight * mean Euclidean distance on old-class samples (CoReS L_dist); "
                             "openbct: the MSE alone (openBCT --l2); squared: CE + weight * mean squared distance on every sample",
    )

    # HBCT paper, Sec. 5 (baseline tuning): every baseline gets 10 settings, lambda in [0, 1]
    grid: ClassVar[dict[str, list[Any]]] = {"weight": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]}


def cores_distance(new: Tensor, old: Tensor, labels: Tensor, old_classes: int) -> Tensor:
    """CoReS L_dist: mean over samples of old classes of the Euclidean distance between the L2-normalised
    (size-matched) new feature and the normalised old feature; zero if the batch has none."""
    keep = labels < old_classes
    if not keep.any():
        return new.sum() * 0
    unit_new = F.normalize(match_size(new[keep].float(), old.shape[1]), dim=1)
    return (unit_new - F.normalize(old[keep].float(), dim=1)).norm(dim=1).mean()


def openbct_mse(new: Tensor, old: Tensor) -> Tensor:
    """openBCT --l2: nn.MSELoss (mean over elements); the wider feature is truncated to the narrower and
    normalised, equal sizes are compared raw."""
    new, old = new.float(), old.float()
    if old.shape[1] < new.shape[1]:
        new = F.normalize(new[:, : old.shape[1]], dim=1)
    elif old.shape[1] > new.shape[1]:
        old = F.normalize(old[:, : new.shape[1]], dim=1)
    return F.mse_loss(new, old)


class L2(CompatibilityMethod):
    name = "l2"
    description = "cross-entropy + Euclidean distance to the frozen old model's features on old data (CoReS's l2 baseline)"
    Params = L2Params

    requires = ("trains",)

    def compatibility_terms(self, model: Network, out, batch: Batch, ctx: StepContext, ce: Tensor) -> dict[str, Tensor]:
        objective = self.params.objective
        if objective == "squared":
            old = old_unit_features(ctx, batch.images)
            new = F.normalize(match_size(out.features.float(), old.shape[1]), dim=1)
            distance = (new - old).pow(2).sum(dim=1).mean()
            return {"loss": ce + self.params.weight * distance, "l2": distance}
        with torch.no_grad():
            old = ctx.old_model.embed(batch.images)
        if objective == "openbct":
            mse = openbct_mse(out.features, old)
            return {"loss": mse, "ce": ce.detach(), "l2": mse}
        distance = cores_distance(out.features, old, batch.labels, ctx.old_model.head.num_classes)
        return {"loss": ce + self.params.weight * distance, "l2": distance}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [L2]
