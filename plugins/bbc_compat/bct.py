"""``bct``: backward-compatible training with the influence loss (Shen et al., CVPR'20, Eq. 3).

L = CE(w_new phi_new(x), y) + lambda * CE(w_old phi_new(x), y), lambda = 1: the frozen old
classifier w_old scores the new features. Classes the old classifier never saw get rows
synthesised from the old model's class-mean features on the step's data (BCT Sec. 3.3), so every
sample of the batch takes part. Default ``scaled-mean``: each mean's direction at the learned rows'
mean norm, with their mean bias. Our linear head sits on unnormalised features whose class means are
several times longer than the learned rows (quick preset: 7.5 against 1.26), so the raw means
(option ``mean``, zero bias) outweigh every learned row: the extended old classifier then
misclassifies all old-class samples, even the old model's own features, and the influence loss
fights the cross-entropy. ``none`` applies the influence loss to old-class samples only (openBCT's
n2o map). The new feature is truncated or zero-padded to the old feature size when they differ
(openBCT). With a replay memory (CL2R/IAM-CL2R) this is BCT-ER.
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

import benchbackcompat
from bbc_compat.common import available_data, class_means
from benchbackcompat.method import Batch, CompatibilityMethod, Method, MethodParams, StepContext, match_size
from benchbackcompat.models.network import Network


Synthesis = Literal["mean", "scaled-mean", "none"]


class BCTParams(MethodParams):
    weight: float = Field(1.0, ge=0, description="lambda, the weight of the influence loss")
    synthesis: Synthesis = Field(
        "scaled-mean", description="old-classifier rows for new classes: the old model's class-mean directions at the "
        "learned rows' mean norm and bias, the raw class means (bias 0), or none (influence on old classes only, openBCT)"
    )

    # HBCT paper, Sec. 5 (baseline tuning): every baseline gets 10 settings, lambda in [0, 1]
    grid: ClassVar[dict[str, list[Any]]] = {"weight": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]}


def old_classifier(old_model: Network, ctx: StepContext, num_classes: int, synthesis: Synthesis) -> tuple[Tensor, Tensor]:
    """Weight and bias of the old classifier over ``num_classes`` classes: its learned rows, then, for the
    classes it never saw, the old model's mean feature of each class (bias 0), or with ``scaled-mean``
    that direction rescaled to the learned rows' mean norm (bias: the learned biases' mean)."""
    head = old_model.head
    weight = head.weight.detach().float()
    bias = torch.zeros(len(weight), device=weight.device)
    if getattr(head, "bias", None) is not None:
        bias = head.bias.detach().float()
    if synthesis == "none" or num_classes <= len(weight):
        return weight, bias
    data = available_data(ctx)
    means, _ = class_means(ctx.embed(old_model, data), data.labels, num_classes)
    extra, extra_bias = means[len(weight):], torch.zeros(num_classes - len(weight), device=bias.device)
    if synthesis == "scaled-mean":
        extra = F.normalize(extra, dim=1) * weight.norm(dim=1).mean()
        extra_bias = extra_bias + bias.mean()
    return torch.cat([weight, extra]), torch.cat([bias, extra_bias])


def influence_loss(new_features: Tensor, labels: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """CE of the frozen old classifier on the (size-matched) new features, over the samples whose
    class the old classifier has a row for (zero if none)."""
    covered = labels < len(weight)
    if not covered.any():
        return new_features.sum() * 0
    logits = F.linear(match_size(new_features[covered].float(), weight.shape[1]), weight, bias)
    return F.cross_entropy(logits, labels[covered])


class BCT(CompatibilityMethod):
    name = "bct"
    requires = ("trains",)
    description = "cross-entropy + influence loss of the frozen old classifier on the new features (Shen et al. 2020)"
    Params = BCTParams
    old_head: tuple[Tensor, Tensor] | None = None  # (weight, bias) of the old classifier for the current step

    def before_step(self, model: Network, ctx: StepContext) -> None:
        self.old_head = None
        if ctx.old_model is not None and ctx.old_model.head is not None:
            self.old_head = old_classifier(ctx.old_model, ctx, ctx.step.seen_classes, self.params.synthesis)

    def aligns(self, batch: Batch, ctx: StepContext) -> bool:
        return self.old_head is not None

    def compatibility_terms(self, model: Network, out, batch: Batch, ctx: StepContext, ce: Tensor) -> dict[str, Tensor]:
        influence = influence_loss(out.features, batch.labels, *self.old_head)
        return {"loss": ce + self.params.weight * influence, "influence": influence}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [BCT]
