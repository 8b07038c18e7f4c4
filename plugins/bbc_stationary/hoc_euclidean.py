"""``hoc-euclidean``: the HOC alignment loss with an ordinary learnable classifier.

The "HOC" baseline of the hyperbolic BCT paper, which removes the d-Simplex: L = lambda * CE(learnable
head) + (1 - lambda) * L_iNCE(phi_t, phi_ref) (Stationary-HOC Eqs. 3-5), phi_ref as in ``hoc``.
"""
from __future__ import annotations

from typing import Any, ClassVar

import torch.nn.functional as F
from torch import Tensor

import benchbackcompat
from benchbackcompat.config import ScenarioBase
from benchbackcompat.method import Batch, Method, StepContext
from benchbackcompat.models.network import Network
from bbc_stationary.alignment import HocTerms, hoc_loss


class EuclideanHocParams(HocTerms):
    # HBCT Sec. 5 (seed-002 §3): 10 settings per baseline, lambda in [0, 1] and, for the contrastive ones, tau in
    # {0.5, 1.0}. HOC's lambda already lies in [0, 1] (it weighs the cross-entropy, 1 - lambda the alignment) and
    # its rho is an inverse temperature, so tau in {0.5, 1.0} is rho in {2, 1}: 5 x 2.
    grid: ClassVar[dict[str, list[Any]]] = {"lam": [0.1, 0.3, 0.5, 0.7, 0.9], "rho": [2.0, 1.0]}


class EuclideanHOC(Method):
    name = "hoc-euclidean"
    description = "learnable classifier + higher-order (InfoNCE) alignment to the frozen old model (HOC without the d-Simplex)"
    Params = EuclideanHocParams

    def unsupported_reason(self, scenario: ScenarioBase) -> str | None:
        if scenario.kind == "model-zoo":
            return f"{self.name} trains each new model with a compatibility loss; a model zoo's models are already trained"
        return None

    def loss(self, model: Network, batch: Batch, ctx: StepContext) -> dict[str, Tensor]:
        out = model(batch.images)
        return hoc_loss(self.params, F.cross_entropy(out.logits, batch.labels), out, batch, ctx)


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [EuclideanHOC]
