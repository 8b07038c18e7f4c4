"""``etf-ce``: a classifier fixed to a simplex equiangular tight frame (Papyan et al. 2020) with every
class pre-allocated (Yang et al., NeurIPS 2022), trained with cross-entropy over all K logits.

Each model is trained on its own (the scenario's initialisation); the frame is the same for every
model, in the scenario's embedding size (at least K-1 dimensions).
"""
from __future__ import annotations

import benchbackcompat
from benchbackcompat.method import Method
from bbc_stationary.common import FixedHeadMethod


class ETFCrossEntropy(FixedHeadMethod):
    name = "etf-ce"
    description = "classifier fixed to a simplex ETF with all classes pre-allocated, cross-entropy (Yang et al. 2022)"
    head = "etf"


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [ETFCrossEntropy]
