"""``ift``: incremental fine-tuning, the CoReS paper's IFT baseline (Biondi et al., Sec. 5).

Every update starts from the previous model (its classifier grown by the new classes) and is
fine-tuned with cross-entropy on the step's data, with no compatibility term. With a replay memory
(CL2R/IAM-CL2R, whose batches are half memory) it would be the ER baseline bit for bit, so it is not
applicable there: run ``er``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import benchbackcompat
from bbc_compat.common import start_from_old
from benchbackcompat.method import Method, StepContext
from benchbackcompat.models.network import Network

if TYPE_CHECKING:
    from benchbackcompat.scenarios import ScenarioBase


class IncrementalFineTuning(Method):
    name = "ift"
    requires = ("trains", "same-architecture")
    description = "fine-tune the previous model with cross-entropy, no compatibility term (CoReS's IFT)"

    def unsupported_reason(self, scenario: ScenarioBase) -> str | None:
        if "replay" in scenario.traits:
            return ("with a replay memory incremental fine-tuning is exactly er (fine-tuning with cross-entropy on "
                    "the new data and the memory, same seeds): see er")
        return super().unsupported_reason(scenario)

    def initialise(self, model: Network, source: Network | None, ctx: StepContext) -> None:
        super().initialise(model, source, ctx)
        start_from_old(model, ctx)


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [IncrementalFineTuning]
