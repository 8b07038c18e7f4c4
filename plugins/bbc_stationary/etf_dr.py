"""``etf-dr``: a classifier fixed to a simplex ETF with every class pre-allocated, trained with the
dot-regression loss of Yang et al. (NeurIPS 2022, Eq. 6):

    L_DR = 1/2 * (w_y^T h / ||h|| - 1)^2   (unit-norm frame rows, E_W = E_H = 1),

which pulls the normalised feature onto its class vertex and leaves the other vertices alone.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

import benchbackcompat
from benchbackcompat.method import Batch, Method, StepContext
from benchbackcompat.models.network import Network
from bbc_stationary.common import FixedHeadMethod, FixedHeadRecipe


def dot_regression(features: Tensor, frame: Tensor, targets: Tensor) -> Tensor:
    """Mean over the batch of 1/2 (cos-like dot of the normalised feature with its unit class vertex - 1)^2."""
    dots = (F.normalize(features.float(), dim=1) * frame[targets].float()).sum(dim=1)
    return 0.5 * (dots - 1).pow(2).mean()


class ETFDotRegression(FixedHeadMethod):
    name = "etf-dr"
    description = "classifier fixed to a simplex ETF with all classes pre-allocated, dot-regression loss (Yang et al. 2022)"
    head = "etf"

    def loss(self, model: Network, batch: Batch, ctx: StepContext) -> dict[str, Tensor]:
        features = model.embed(batch.images)
        dr = dot_regression(features, model.head.weight, self.targets(model, batch, ctx))
        return {"loss": dr, "dr": dr}

    def reference(self) -> Method:
        """Dot regression with labels left to right: the models pretrained elsewhere and the independent
        new model of P_com/P_up are trained with the method's own loss, as its old model is."""
        return DotRegressionRecipe(self)


class DotRegressionRecipe(FixedHeadRecipe):
    """Dot regression onto the fixed frame, labels as they are."""

    name = "standard-fixed-dr"

    def loss(self, model: Network, batch: Batch, ctx: StepContext) -> dict[str, Tensor]:
        dr = dot_regression(model.embed(batch.images), model.head.weight, batch.labels)
        return {"loss": dr, "dr": dr}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [ETFDotRegression]
