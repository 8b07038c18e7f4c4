"""``dsimplex-fd``: d-Simplex-FD (CL2R, Biondi et al., ACM TOMM 2023).

A fixed d-Simplex over K pre-allocated classes, cross-entropy over all K logits, plus feature
distillation on the replayed samples only: w * mean_{i in memory} (1 - cos(phi_t(x_i), phi_ref(x_i)))
(a cosine-embedding loss with target 1), w = 5 * sqrt(n_new / n_old) with n_new the classes of the
task and n_old the classes seen before it (the CL2R reference code). phi_ref as in ``hoc``.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

import benchbackcompat
from benchbackcompat.method import Batch, CompatibilityMethod, Method, StepContext
from benchbackcompat.models.network import Network, NetworkOutput
from bbc_stationary.common import FixedHeadMethod, FixedParams




class FDParams(FixedParams):
    base_weight: float = Field(5.0, ge=0, description="w = base_weight * sqrt(new classes / old classes)")


def distillation_weight(base: float, ctx: StepContext) -> float:
    start, stop = ctx.step.classes
    return base * math.sqrt((stop - start) / start) if start > 0 else 0.0


class DSimplexFD(FixedHeadMethod, CompatibilityMethod):
    name = "dsimplex-fd"
    requires = ("replay",)
    description = "d-Simplex fixed classifier + feature distillation on replayed samples (CL2R's d-Simplex-FD)"
    Params = FDParams

    def aligns(self, batch: Batch, ctx: StepContext) -> bool:
        """Only batches with replayed samples are distilled, towards the frozen reference."""
        return ctx.align_to is not None and bool(batch.from_memory.any())

    def compatibility_terms(self, model: Network, out: NetworkOutput, batch: Batch, ctx: StepContext,
                            ce: Tensor) -> dict[str, Tensor]:
        replayed = batch.from_memory
        with torch.no_grad():
            old = ctx.align_to.embed(batch.images[replayed])
        fd = (1 - F.cosine_similarity(out.features[replayed].float(), old.float(), dim=1)).mean()
        weight = distillation_weight(self.params.base_weight, ctx)
        return {"loss": ce + weight * fd, "fd": fd}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [DSimplexFD]
