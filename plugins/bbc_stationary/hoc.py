"""``hoc``: d-Simplex-HOC (Biondi et al., CVPR'24 / "A Stationary Representation is All You Need").

A fixed d-Simplex over K pre-allocated classes (feature = bias-free projection to K-1 dims) and
L_HOC = lambda * CE over all K logits + (1 - lambda) * L_iNCE(phi_t, phi_ref) (Eqs. 2-5), where
phi_ref is the frozen previous model, or the incoming pretrained model at task 1 and at the
replacement tasks of IAM-CL2R.
"""
from __future__ import annotations

from torch import Tensor

import benchbackcompat
from benchbackcompat.method import Batch, Method, StepContext
from benchbackcompat.models.network import Network
from bbc_stationary.alignment import HocTerms, hoc_loss
from bbc_stationary.common import FixedHeadMethod, FixedParams


class HocParams(FixedParams, HocTerms):
    pass


class DSimplexHOC(FixedHeadMethod):
    name = "hoc"
    description = "d-Simplex fixed classifier + higher-order (InfoNCE) alignment to the frozen old model (d-Simplex-HOC)"
    Params = HocParams

    def loss(self, model: Network, batch: Batch, ctx: StepContext) -> dict[str, Tensor]:
        out = model(batch.images)
        return hoc_loss(self.params, self.stationary_ce(out.logits, model, batch, ctx), out, batch, ctx)


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [DSimplexHOC]
