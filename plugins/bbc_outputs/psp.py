"""``psp``: Probability Simplex Projections, softmax outputs as compatible features (Eqs. 2-4, Alg. 1).

Every model is trained alone with (tempered) cross-entropy; the feature of a query from model t
against the gallery of model k is its softmax truncated to model k's classes, centred and
L2-normalised. No compatibility loss, no access to the old model.
"""
from __future__ import annotations

import benchbackcompat
from bbc_outputs.outputs import OutputFeatures
from benchbackcompat.method import Method


class PSP(OutputFeatures):
    name = "psp"
    description = "softmax outputs truncated to the gallery model's classes, centred, normalised (no compatibility training)"
    softmax = True


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [PSP]
