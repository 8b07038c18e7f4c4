"""Shared pieces of the Lorentz methods (no hook implementations here): the Lorentz-geometry model,
features and similarity (also the P_com/P_up references), the RINCE loss and the HBCT objective.

HBCT (Bui et al., ICML'25): L = L_base + lambda (L_entail + L_contrast) (Eq. 13), with the old
embedding h_o as the entailment cone's apex and the new embedding h_n as its child, and the
uncertainty-weighted robust contrastive loss (Eq. 12, q = Unc(h_o) per pair, geodesic distances / tau).
"""
from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

from benchbackcompat import geometry
from benchbackcompat.method import (Batch, CompatibilityMethod, Method, MethodParams, Similarity, StepContext,
                                    backbone_options)
from benchbackcompat.metrics.retrieval import Templates
from benchbackcompat.models.lorentz import LorentzNetwork
from benchbackcompat.models.registry import create_backbone

Q_MIN = 1e-3  # floor of the per-sample RINCE q (guards the 1/q factors)


class LorentzParams(MethodParams):
    curvature: float = Field(1.0, gt=0, description="paper curvature K (the hyperboloid has curvature -K)")
    zeta_old: float = Field(1.0, gt=0, description="norm clip of the first model's tangent vectors")
    zeta_step: float = Field(0.2, ge=0, description="clip growth per update: zeta_t = zeta_old + t * zeta_step")


class LorentzMethod(Method):
    """Cross-entropy of the Lorentz MLR on the hybrid encoder, geodesic retrieval: the Lorentz
    references (old and unaligned new models) of P_com / P_up."""

    name = "lorentz-standard"
    requires = ("trains",)
    description = "Lorentz hybrid encoder + Lorentz MLR, cross-entropy only"
    Params: ClassVar[type[MethodParams]] = LorentzParams
    head = "lorentz-mlr"

    def model_identity(self) -> dict[str, Any]:
        return {k: getattr(self.params, k) for k in LorentzParams.model_fields}

    def zeta(self, step: int) -> float:
        return self.params.zeta_old + step * self.params.zeta_step

    def build_model(self, ctx: StepContext, backbone: str, num_classes: int) -> LorentzNetwork:
        net = create_backbone(backbone, in_chans=ctx.train_data.images.shape[1], **backbone_options(ctx, backbone))
        return LorentzNetwork(net, num_classes, ctx.scenario.model.embedding_dim, self.params.curvature,
                              self.zeta(ctx.step.index))

    def features(self, model: LorentzNetwork, images: Tensor) -> Tensor:
        return model.lift(images)

    def feature_size(self, model: LorentzNetwork) -> int:
        return model.feature_dim + 1  # [time, space]

    def similarity(self) -> Similarity:
        return geometry.negative_distance(self.params.curvature)

    def templates(self) -> Templates:
        """Class templates on the hyperboloid: the Lorentzian centroid (a normalised Euclidean mean of
        hyperboloid points leaves the manifold, and its geodesic distances collapse to the clamp)."""
        return geometry.class_templates(self.params.curvature)

    def reference(self) -> Method:
        params = LorentzParams(**{k: getattr(self.params, k) for k in LorentzParams.model_fields})
        return LorentzMethod(params)


def rince(distances: Tensor, q: Tensor, beta: float) -> Tensor:
    """Robust InfoNCE (HBCT Eq. 12) with per-row q: mean_i of
    -exp(-q_i D_ii) / q_i + (beta sum_j exp(-D_ij))^{q_i} / q_i, where D is n x n (row i: new
    embedding i, column j: old embedding j, the positive on the diagonal). As q -> 0 it tends to
    InfoNCE with logits -D plus log(beta); the power is taken through logsumexp, so far negatives
    cannot underflow."""
    q = q.clamp_min(Q_MIN)
    positive = -torch.exp(-q * distances.diagonal()) / q
    negative = torch.exp(q * (torch.logsumexp(-distances, dim=1) + math.log(beta))) / q
    return (positive + negative).mean()


class HBCTParams(LorentzParams):
    lam: float = Field(0.3, ge=0, description="lambda, weight of L_entail + L_contrast")
    entail_weight: float = Field(1.0, ge=0, description="lambda_entail inside the bracket (Fig. 7c)")
    tau: float = Field(0.5, gt=0, description="temperature dividing the geodesic distances in RINCE")
    beta: float = Field(0.01, gt=0, le=1, description="RINCE beta")
    min_radius: float = Field(0.1, gt=0, description="entailment cone minimum radius epsilon")


class HBCTBase(LorentzMethod, CompatibilityMethod):
    """HBCT's objective; ``entailment`` switches L_entail (off for the ablation)."""

    Params = HBCTParams
    entailment: ClassVar[bool] = True

    def classify(self, model: LorentzNetwork, batch: Batch, ctx: StepContext) -> tuple[Tensor, Tensor]:
        """The new embedding on the hyperboloid and the Lorentz MLR cross-entropy."""
        h_new = geometry.expmap0(model.tangent(batch.images), self.params.curvature)
        return h_new, F.cross_entropy(model.head(h_new), batch.labels)

    def compatibility_terms(self, model: LorentzNetwork, h_new: Tensor, batch: Batch, ctx: StepContext,
                            ce: Tensor) -> dict[str, Tensor]:
        p = self.params
        with torch.no_grad():
            z_old = ctx.old_model.tangent(batch.images)
            h_old = geometry.expmap0(z_old, p.curvature)
            q = geometry.uncertainty(z_old, p.curvature)
        with torch.autocast(batch.images.device.type, enabled=False):
            contrast = rince(geometry.pairwise_distance(h_new, h_old, p.curvature) / p.tau, q, p.beta)
            terms = {"contrast": contrast, "q": q.mean()}
            align = contrast
            if self.entailment:
                entail = geometry.entailment_loss(h_old, h_new, p.curvature, p.min_radius).mean()
                align = align + p.entail_weight * entail
                terms["entail"] = entail
            total = ce + p.lam * align
        return {"loss": total, **terms}
