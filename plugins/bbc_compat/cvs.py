"""``cvs``: continual learning for visual search with backward-consistent embeddings (Wan et al., CVPR'22).

L = CE(cos / 0.05) + alpha * L_m + beta * L_d, alpha = 10, beta = 1 (official ivclab/CVS code):

- L_m: triplet margin loss (margin 0.1, Euclidean) with anchor the new normalised feature, positive the
  old model's normalised feature of the same image and negative the hardest (nearest) old feature of
  another class in the batch;
- L_d = mean ||c_prev[y] - f^_new||^2 over samples of the classes the old model knew, c_prev[y] the mean
  of the normalised old features of class y (the previous gallery's class centre). Here the previous
  gallery is re-encoded by the old model on the step's data (the official code keeps the features each
  session indexed).

The classifier is cosine with scale 1/0.05; a fine-tuned model keeps its old rows (the runner copies
them). New features are truncated or zero-padded to the old size. With a replay memory
(CL2R/IAM-CL2R) this is CVS with its exemplar replay.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

import benchbackcompat
from bbc_compat.common import available_data, class_means
from benchbackcompat.method import (Batch, CompatibilityMethod, Method, MethodParams, StepContext, backbone_options,
                                    match_size, old_unit_features)
from benchbackcompat.models.network import Network, build_network

SCALE = 1 / 0.05  # cosine classifier scale (temperature 0.05); fixed, so the shared old model is well defined


class CVSParams(MethodParams):
    triplet_weight: float = Field(10.0, ge=0, description="alpha, weight of the old/new triplet loss")
    margin: float = Field(0.1, ge=0, description="triplet margin")
    distill_weight: float = Field(1.0, ge=0, description="beta, weight of the distance to the previous class centres")


def hardest_negative_triplet(new_unit: Tensor, old_unit: Tensor, labels: Tensor, margin: float) -> Tensor:
    """mean_i relu(||a_i - p_i|| - min_{j: y_j != y_i} ||a_i - o_j|| + margin), a = new, p = o = old
    features; anchors without a negative in the batch are left out (0 if none has one)."""
    distances = torch.cdist(new_unit, old_unit)
    other = labels[:, None] != labels[None, :]
    has_negative = other.any(dim=1)
    if not has_negative.any():
        return new_unit.sum() * 0
    negative = distances.masked_fill(~other, float("inf")).min(dim=1).values
    positive = distances.diagonal()
    return F.relu(positive - negative + margin)[has_negative].mean()


def centre_distillation(new_unit: Tensor, labels: Tensor, centres: Tensor) -> Tensor:
    """mean ||c[y] - f^||^2 over samples whose class has a previous centre (rows of ``centres``)."""
    keep = labels < len(centres)
    if not keep.any():
        return new_unit.sum() * 0
    return (centres[labels[keep]] - new_unit[keep]).pow(2).sum(dim=1).mean()


class CVS(CompatibilityMethod):
    name = "cvs"
    requires = ("trains",)
    description = "cosine CE + old/new hardest-negative triplet + distillation to previous class centres (Wan et al. 2022)"
    Params = CVSParams
    head = "cosine"
    centres: Tensor | None = None  # previous gallery's class centres for the current step

    def build_model(self, ctx: StepContext, backbone: str, num_classes: int) -> Network:
        return build_network(
            backbone, num_classes=num_classes, head="cosine", head_kwargs={"scale": SCALE},
            embedding_dim=ctx.scenario.model.embedding_dim, **backbone_options(ctx, backbone),
            in_chans=ctx.train_data.images.shape[1],
        )

    def before_step(self, model: Network, ctx: StepContext) -> None:
        self.centres = None
        if ctx.old_model is not None and ctx.old_model.head is not None:
            data = available_data(ctx)
            old_classes = ctx.old_model.head.num_classes
            unit = F.normalize(ctx.embed(ctx.old_model, data), dim=1)
            self.centres = class_means(unit, data.labels, max(old_classes, ctx.step.seen_classes))[0][:old_classes]

    def aligns(self, batch: Batch, ctx: StepContext) -> bool:
        return self.centres is not None

    def compatibility_terms(self, model: Network, out, batch: Batch, ctx: StepContext, ce: Tensor) -> dict[str, Tensor]:
        old_unit = old_unit_features(ctx, batch.images)
        new_unit = F.normalize(match_size(out.features.float(), old_unit.shape[1]), dim=1)
        triplet = hardest_negative_triplet(new_unit, old_unit, batch.labels, self.params.margin)
        distill = centre_distillation(new_unit, batch.labels, self.centres)
        total = ce + self.params.triplet_weight * triplet + self.params.distill_weight * distill
        return {"loss": total, "triplet": triplet, "distillation": distill}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [CVS]
