"""``cores``: CoReS, Compatible Representations via Stationarity (Biondi et al., TPAMI 2023).

A fixed d-Simplex over K pre-allocated outputs (default: the scenario's classes; any K >= them, e.g.
10,000 as in Table 11) and plain cross-entropy over all K logits (Eq. 9), no old-model term. Every
model is trained on the cumulative data, by default from the same initial weights as the first model
(Sec. 4, "SAME"); options: a fresh random initialisation or fine-tuning the previous model (Table 9).
"""
from __future__ import annotations

from typing import Literal

import torch
from pydantic import Field

import benchbackcompat
from benchbackcompat.method import Method, StepContext, copy_matching_weights
from benchbackcompat.models.network import Network
from bbc_stationary.common import FixedHeadMethod, FixedParams



class CoresParams(FixedParams):
    init: Literal["same", "random", "fine-tune"] = Field(
        "same", description="same: every model starts from the first model's initial weights; random: a new draw per "
                            "model; fine-tune: from the previous model",
    )


class CoReS(FixedHeadMethod):
    name = "cores"
    requires = ("trains", "cumulative")
    description = "d-Simplex fixed classifier, cross-entropy over all pre-allocated classes, same initialisation (CoReS)"
    Params = CoresParams

    def initialise(self, model: Network, source: Network | None, ctx: StepContext) -> None:
        """The initial weights the ``init`` option asks for, whatever the scenario's initialisation."""
        if self.params.init == "fine-tune" and ctx.old_model is not None:
            copy_matching_weights(model, ctx.old_model)
            return
        draw = 0 if self.params.init == "same" else ctx.step.index
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(ctx.derived_seed("cores-init", draw))
            initial = self.build_model(ctx, ctx.step.backbone, ctx.step.seen_classes)
        model.load_state_dict(initial.state_dict())


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [CoReS]
