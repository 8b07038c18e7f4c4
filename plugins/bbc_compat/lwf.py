"""``lwf``: learning without forgetting (Li & Hoiem, TPAMI'17), a CoReS baseline, in two readings (``target``).

The new model starts from the old one and minimises CE(z_new, y) + lambda_o * distillation:

- ``old-head`` (default; openBCT's ``--lwf``, the code CoReS takes its baselines from): the frozen old
  classifier applied to the new features, W_old phi_new(x), is distilled towards the same classifier on
  the old features, W_old phi_old(x): mean_i -sum_k softmax(W_old phi_old)_k log softmax(W_old phi_new)_k,
  T = 1 (openBCT freezes the old classifier: "it will not work for BCT" otherwise). The new feature is
  truncated or zero-padded to the old size when they differ.
- ``new-head`` (our first reading, the knowledge-distillation form of the paper's modified cross-entropy):
  the new head's logits over the K_old old classes distilled from the old model's logits,
  H(softmax(z_old / T), softmax(z_new[:, :K_old] / T)), T = 2 by default.

With a replay memory (CL2R/IAM-CL2R) the memory images are distilled too.
"""
from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

import benchbackcompat
from bbc_compat.common import start_from_old
from benchbackcompat.method import Batch, CompatibilityMethod, Method, MethodParams, StepContext, match_size
from benchbackcompat.models.network import Network


class LwFParams(MethodParams):
    weight: float = Field(1.0, ge=0, description="lambda_o, weight of the distillation term")
    target: Literal["old-head", "new-head"] = Field(
        "old-head", description="old-head: the frozen old classifier on new vs old features, T = temperature (openBCT "
                                "--lwf, 1); new-head: the new head's old-class logits vs the old model's logits",
    )
    temperature: float | None = Field(None, gt=0, description="T; None: 1 for old-head (openBCT), 2 for new-head")


def distillation_loss(new_logits: Tensor, old_logits: Tensor, temperature: float) -> Tensor:
    """mean_i -sum_k softmax(z_old,i / T)_k log softmax(z_new,i[:K_old] / T)_k."""
    target = F.softmax(old_logits.float() / temperature, dim=1)
    log_probs = F.log_softmax(new_logits[:, : old_logits.shape[1]].float() / temperature, dim=1)
    return -(target * log_probs).sum(dim=1).mean()


class LwF(CompatibilityMethod):
    name = "lwf"
    requires = ("trains", "same-architecture")
    description = "fine-tuning + distillation through the frozen old classifier, new vs old features (LwF as in openBCT)"
    Params = LwFParams

    def initialise(self, model: Network, source: Network | None, ctx: StepContext) -> None:
        super().initialise(model, source, ctx)
        start_from_old(model, ctx)

    def aligns(self, batch: Batch, ctx: StepContext) -> bool:
        return ctx.old_model is not None and ctx.old_model.head is not None

    def compatibility_terms(self, model: Network, out, batch: Batch, ctx: StepContext, ce: Tensor) -> dict[str, Tensor]:
        old_model = ctx.old_model
        new_head = self.params.target == "new-head"
        temperature = self.params.temperature or (2.0 if new_head else 1.0)
        with torch.no_grad():
            old = old_model(batch.images)
        if new_head:
            distill = distillation_loss(out.logits, old.logits, temperature)
        else:
            through_old = old_model.head(match_size(out.features.float(), old.features.shape[1]))
            distill = distillation_loss(through_old, old.logits, temperature)
        return {"loss": ce + self.params.weight * distill, "distillation": distill}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [LwF]
