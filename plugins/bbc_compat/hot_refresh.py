"""``hot-refresh``: regression-alleviating compatible training (Zhang et al., ICLR'22), the
cosine-contrastive baseline of HBCT (Bui et al., ICML'25, Table 1).

L = CE + weight * mean_i -log( e^{s(n_i, o_i)/tau} / (e^{s(n_i, o_i)/tau}
    + sum_{j: y_j != y_i} e^{s(n_i, o_j)/tau} + sum_{j: y_j != y_i} e^{s(n_i, n_j)/tau}) ),
with s the cosine similarity, n the new and o the frozen old model's features. Its negative
selection differs from HOC's: old *and new* features of the other classes in the batch (the
new-to-new negatives alleviate regression); same-class samples are not negatives. tau follows
HBCT's grid for contrastive baselines ({0.5, 1.0}).
"""
from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

import benchbackcompat
from benchbackcompat.errors import BenchError
from benchbackcompat.method import Batch, CompatibilityMethod, Method, MethodParams, StepContext, old_unit_features
from benchbackcompat.models.network import Network


class HotRefreshParams(MethodParams):
    weight: float = Field(1.0, ge=0, description="weight of the compatible contrastive term")
    tau: float = Field(0.5, gt=0, description="temperature of the cosine similarities")

    # HBCT paper, Sec. 5 (baseline tuning): every baseline gets 10 settings, lambda in [0, 1], and tau in {0.5, 1.0} for
    # the contrastive ones: 5 x 2
    grid: ClassVar[dict[str, list[Any]]] = {"weight": [0.2, 0.4, 0.6, 0.8, 1.0], "tau": [0.5, 1.0]}


def hot_refresh_loss(new: Tensor, old: Tensor, labels: Tensor, tau: float) -> Tensor:
    """The contrastive term above for L2-normalised ``new`` and ``old`` (n x d) features."""
    other = labels[:, None] != labels[None, :]
    to_old = new @ old.T / tau
    to_new = (new @ new.T / tau).masked_fill(~other, float("-inf"))
    candidates = torch.cat([to_old.masked_fill(~other, float("-inf")), to_new], dim=1)
    positive = to_old.diagonal()
    denominator = torch.logsumexp(torch.cat([positive[:, None], candidates], dim=1), dim=1)
    return (denominator - positive).mean()


class HotRefresh(CompatibilityMethod):
    name = "hot-refresh"
    description = "cross-entropy + cosine contrastive alignment to the old model, old and new other-class negatives"
    Params = HotRefreshParams
    requires = ("trains",)

    def compatibility_terms(self, model: Network, out, batch: Batch, ctx: StepContext, ce: Tensor) -> dict[str, Tensor]:
        old = old_unit_features(ctx, batch.images)
        new = F.normalize(out.features.float(), dim=1)
        if new.shape[1] != old.shape[1]:
            raise BenchError(f"hot-refresh needs equal feature sizes (old {old.shape[1]}, new {new.shape[1]}); "
                             "set model.embedding_dim")
        contrast = hot_refresh_loss(new, old, batch.labels, self.params.tau)
        return {"loss": ce + self.params.weight * contrast, "contrast": contrast}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [HotRefresh]
