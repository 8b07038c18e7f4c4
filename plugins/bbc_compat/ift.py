"""``ift``: incremental fine-tuning, the CoReS paper's IFT baseline (Biondi et al., Sec. 5).

Every update starts from the previous model (its classifier grown by the new classes) and is
fine-tuned with cross-entropy on the step's data, with no compatibility term. In CL2R/IAM-CL2R,
whose batches are half replay memory, this is the ER baseline.
"""
from __future__ import annotations

import benchbackcompat
from bbc_compat.common import start_from_old
from benchbackcompat.method import Method, StepContext
from benchbackcompat.models.network import Network


class IncrementalFineTuning(Method):
    name = "ift"
    requires = ("trains", "same-architecture")
    description = "fine-tune the previous model with cross-entropy, no compatibility term (CoReS's IFT)"

    def initialise(self, model: Network, source: Network | None, ctx: StepContext) -> None:
        super().initialise(model, source, ctx)
        start_from_old(model, ctx)


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [IncrementalFineTuning]
