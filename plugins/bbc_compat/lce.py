"""``lce``: learning compatible embeddings (Meng et al., ICCV'21), the official IrvingMeng/LCE variant.

L = CE_arc + lambda_a * MSE(normalise(W_new), C_old) + lambda_b * mean_i relu(cos_min[y_i] - cos(f_i, c[y_i])),
lambda_a = 100, lambda_b = 1, ArcFace head s = 16, m = 0.1 (official constants). The old statistics are
computed with the old model on all the step's data (new classes included, ``save_lcefeat``):
c_k = normalised mean of the normalised old features of class k, cos_min_k = min cos(f, c_k). We follow
the identity-mapping variant (no RBT transformation) and, unlike the official code, which clamps the
raw dot product f_new . c to [-1, 1], take the cosine of the new feature: our features are unnormalised
projection outputs. AdvBCT's re-implementation (angular IQR boundary, 1 - cos alignment) is not this
variant. The new class weights are truncated or zero-padded to the old feature size. With a replay
memory (CL2R/IAM-CL2R) this is LCE-ER. The old model is LCE's own, trained with ArcFace (s = 16, m = 0.1) as
in the official code, not the scenario's shared cross-entropy model.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

import benchbackcompat
from bbc_compat.common import available_data, class_means
from benchbackcompat.method import Batch, CompatibilityMethod, Method, MethodParams, StepContext, match_size
from benchbackcompat.models.network import Network, NetworkOutput


class LCEParams(MethodParams):
    alignment_weight: float = Field(100.0, ge=0, description="lambda_a, MSE of normalised class weights to old centres")
    boundary_weight: float = Field(1.0, ge=0, description="lambda_b, the angular boundary term")
    margin: float = Field(0.1, ge=0, lt=1.5, description="ArcFace additive angular margin m")


def arcface_logits(logits: Tensor, labels: Tensor, scale: float, margin: float) -> Tensor:
    """s * cos(theta_y + m) for the target class, s * cos(theta_j) for the others (ArcFace), from cosine-head logits."""
    cos = (logits.float() / scale).clamp(-1 + 1e-6, 1 - 1e-6)
    target = cos.gather(1, labels[:, None])
    shifted = torch.cos(torch.acos(target) + margin)
    return scale * cos.scatter(1, labels[:, None], shifted)


def old_class_statistics(features: Tensor, labels: Tensor, num_classes: int) -> tuple[Tensor, Tensor, Tensor]:
    """(centres c_k, minimum cosines cos_min_k, mask of classes with samples) of old-model features."""
    unit = F.normalize(features.float(), dim=1)
    means, counts = class_means(unit, labels, num_classes)
    centres = F.normalize(means, dim=1)
    cosines = (unit * centres[labels]).sum(dim=1)
    cos_min = torch.ones(num_classes, device=unit.device).scatter_reduce(0, labels, cosines, "amin", include_self=False)
    return centres, cos_min, counts > 0


def alignment_loss(class_weight: Tensor, centres: Tensor, present: Tensor) -> Tensor:
    """Mean squared error between the normalised (size-matched) class weights and the old centres."""
    weight = F.normalize(match_size(class_weight[: len(centres)].float(), centres.shape[1]), dim=1)
    return F.mse_loss(weight[present], centres[present])


def boundary_loss(features: Tensor, labels: Tensor, centres: Tensor, cos_min: Tensor, present: Tensor) -> Tensor:
    """mean_i relu(cos_min[y_i] - cos(f_i, c[y_i])) over samples of classes with statistics."""
    keep = present[labels]
    unit = F.normalize(match_size(features[keep].float(), centres.shape[1]), dim=1)
    y = labels[keep]
    if len(y) == 0:
        return features.sum() * 0
    return F.relu(cos_min[y] - (unit * centres[y]).sum(dim=1)).mean()


class LCE(CompatibilityMethod):
    name = "lce"
    requires = ("trains",)
    description = "ArcFace + class-weight alignment to old centres + angular boundary (Meng et al. 2021, official variant)"
    Params = LCEParams
    head = "cosine"
    standard_steps = "none"  # the old model is trained with ArcFace too (official code), not plain cross-entropy
    stats: tuple[Tensor, Tensor, Tensor] | None = None  # old centres, minimum cosines, classes present

    def reference(self) -> Method:
        """ArcFace alone (LCE without an old model): the models pretrained elsewhere and the independent new
        model of P_com/P_up, trained as LCE's own old model is."""
        return type(self)(self.params)

    def before_step(self, model: Network, ctx: StepContext) -> None:
        self.stats = None
        if ctx.old_model is not None:
            data = available_data(ctx)
            self.stats = old_class_statistics(ctx.embed(ctx.old_model, data), data.labels, ctx.step.seen_classes)

    def classify(self, model: Network, batch: Batch, ctx: StepContext) -> tuple[NetworkOutput, Tensor]:
        """ArcFace: the angular margin on the target logit, then cross-entropy."""
        out = model(batch.images)
        return out, F.cross_entropy(arcface_logits(out.logits, batch.labels, model.head.scale, self.params.margin), batch.labels)

    def aligns(self, batch: Batch, ctx: StepContext) -> bool:
        return self.stats is not None

    def compatibility_terms(self, model: Network, out, batch: Batch, ctx: StepContext, ce: Tensor) -> dict[str, Tensor]:
        centres, cos_min, present = self.stats
        align = alignment_loss(model.head.weight, centres, present)
        boundary = boundary_loss(out.features, batch.labels, centres, cos_min, present)
        total = ce + self.params.alignment_weight * align + self.params.boundary_weight * boundary
        return {"loss": total, "alignment": align, "boundary": boundary}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [LCE]
