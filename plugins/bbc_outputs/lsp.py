"""``lsp``: Logit Simplex Projections, logits as compatible features (Eq. 6 with Alg. 1's projection).

As PSP on the logits: truncated to the gallery model's classes, centred (Alg. 1; ``center = false``
gives Eq. 6, normalisation only), L2-normalised. Uses the same trained models as PSP.
"""
from __future__ import annotations

from pydantic import Field

import benchbackcompat
from bbc_outputs.outputs import OutputFeatures, OutputParams
from benchbackcompat.method import Method


class LSPParams(OutputParams):
    center: bool = Field(True, description="centre the truncated logits (Alg. 1); false: Eq. 6, normalisation only")


class LSP(OutputFeatures):
    name = "lsp"
    description = "logits truncated to the gallery model's classes, centred, normalised (no compatibility training)"
    Params = LSPParams
    softmax = False

    @property
    def center(self) -> bool:
        return self.params.center


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [LSP]
