"""The higher-order compatibility (HOC) alignment loss and the HOC hyperparameters, shared by ``hoc``
and ``hoc-euclidean``. No hook implementations here."""
from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

from benchbackcompat.method import Batch, CompatibilityMethod, MethodParams, StepContext
from benchbackcompat.models.network import Network, NetworkOutput
from benchbackcompat.scenarios import CL2R, IAMCL2R

Negatives = Literal["official", "paper", "infonce"]


class HocTerms(MethodParams):
    lam: float = Field(0.1, ge=0, le=1, description="lambda: weight of the cross-entropy; 1 - lambda weighs the alignment (Eq. 3)")
    rho: float | None = Field(
        None, gt=0, description="inverse temperature of the scaled cosine (Eq. 5); None: 5 for CIFAR-style (32x32) cl2r, else 10",
    )
    negatives: Negatives = Field(
        "official",
        description="official: same-class similarities multiplied by 0 (iamcl2r code); paper: j != i (Eq. 4); "
                    "infonce: every j including the positive",
    )


def protocol_rho(rho: float | None, ctx: StepContext) -> float:
    """rho, or the per-protocol default of "A Stationary (and Therefore Compatible)
    Representation is All You Need" (its hyperparameter table: CL2R CIFAR100/10: 5; TinyImageNet, CUB, IAM-CL2R: 10)."""
    if rho is not None:
        return rho
    cifar_style_cl2r = isinstance(ctx.scenario, CL2R) and not isinstance(ctx.scenario, IAMCL2R) and ctx.image_size <= 32
    return 5.0 if cifar_style_cl2r else 10.0


def hoc_alignment(old: Tensor, new: Tensor, labels: Tensor, rho: float, negatives: Negatives = "official") -> Tensor:
    """L_iNCE of Stationary-HOC (Eqs. 4-5), averaged over the batch (the paper sums; the code averages).

    S_ij = rho * cos(old_i, new_j): the anchor is the frozen old feature of image i, the positive the new
    feature of the same image, the negatives new features of other images. loss_i = -S_ii + log sum_j e^{S'_ij},
    where S' is S with same-class entries (the diagonal included) set to 0 ("official"), S over j != i
    ("paper"), or S over every j ("infonce")."""
    scores = rho * F.normalize(old.float(), dim=1) @ F.normalize(new.float(), dim=1).T
    positive = scores.diagonal()
    if negatives == "official":
        denominator = scores * (labels[:, None] != labels[None, :])
    elif negatives == "paper":
        eye = torch.eye(len(scores), dtype=torch.bool, device=scores.device)
        denominator = scores.masked_fill(eye, float("-inf"))
    else:
        denominator = scores
    return (torch.logsumexp(denominator, dim=1) - positive).mean()


class HocAlignment(CompatibilityMethod):
    """L_HOC = lambda * CE + (1 - lambda) * L_iNCE(new, frozen reference) (Eq. 3); CE alone when there is no
    reference (a first step trained from scratch). ``params`` is a :class:`HocTerms`."""

    def aligns(self, batch: Batch, ctx: StepContext) -> bool:
        return ctx.align_to is not None

    def compatibility_terms(self, model: Network, out: NetworkOutput, batch: Batch, ctx: StepContext,
                            ce: Tensor) -> dict[str, Tensor]:
        params = self.params
        with torch.no_grad():
            old = ctx.align_to.embed(batch.images)
        nce = hoc_alignment(old, out.features, batch.labels, protocol_rho(params.rho, ctx), params.negatives)
        return {"loss": params.lam * ce + (1 - params.lam) * nce, "nce": nce}
