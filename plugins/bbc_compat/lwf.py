"""``lwf``: learning without forgetting (Li & Hoiem, TPAMI'17, Eq. 2-4), a CoReS baseline.

The new model starts from the old one and minimises
L = CE(z_new, y) + lambda_o * H(softmax(z_old / T), softmax(z_new[:, :K_old] / T)), lambda_o = 1, T = 2:
its logits over the K_old classes the old model knew are distilled from the frozen old model's
logits on the same images (the knowledge-distillation form of the paper's modified cross-entropy).
With a replay memory (CL2R/IAM-CL2R) the memory images are distilled too.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

import benchbackcompat
from bbc_compat.common import start_from_old
from benchbackcompat.method import Batch, CompatibilityMethod, Method, MethodParams, StepContext
from benchbackcompat.models.network import Network


class LwFParams(MethodParams):
    weight: float = Field(1.0, ge=0, description="lambda_o, weight of the distillation term")
    temperature: float = Field(2.0, gt=0, description="T, the distillation temperature")


def distillation_loss(new_logits: Tensor, old_logits: Tensor, temperature: float) -> Tensor:
    """mean_i -sum_k softmax(z_old,i / T)_k log softmax(z_new,i[:K_old] / T)_k."""
    target = F.softmax(old_logits.float() / temperature, dim=1)
    log_probs = F.log_softmax(new_logits[:, : old_logits.shape[1]].float() / temperature, dim=1)
    return -(target * log_probs).sum(dim=1).mean()


class LwF(CompatibilityMethod):
    name = "lwf"
    requires = ("trains", "same-architecture")
    description = "fine-tuning + distillation of the old model's logits on the old classes (Li & Hoiem 2017)"
    Params = LwFParams

    def initialise(self, model: Network, source: Network | None, ctx: StepContext) -> None:
        super().initialise(model, source, ctx)
        start_from_old(model, ctx)

    def aligns(self, batch: Batch, ctx: StepContext) -> bool:
        return ctx.old_model is not None and ctx.old_model.head is not None

    def compatibility_terms(self, model: Network, out, batch: Batch, ctx: StepContext, ce: Tensor) -> dict[str, Tensor]:
        with torch.no_grad():
            old_logits = ctx.old_model(batch.images).logits
        distill = distillation_loss(out.logits, old_logits, self.params.temperature)
        return {"loss": ce + self.params.weight * distill, "distillation": distill}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [LwF]
