"""``ift``: incremental fine-tuning, the CoReS paper's IFT baseline (Biondi et al., Sec. 5).

Every update starts from the previous model (its classifier grown by the new classes) and is
fine-tuned with cross-entropy on the step's data, with no compatibility term. With a replay memory
(CL2R/IAM-CL2R, whose batches are half memory) it would be the ER baseline bit for bit, so it is not
applicable there: run ``er``.
"""
from __future__ import annotations

import benchbackcompat
from bbc_compat.common import fine_tuning_reason, start_from_old
from benchbackcompat.config import ScenarioBase
from benchbackcompat.method import Method, StepContext
from benchbackcompat.models.network import Network


class IncrementalFineTuning(Method):
    name = "ift"
    description = "fine-tune the previous model with cross-entropy, no compatibility term (CoReS's IFT)"

    def unsupported_reason(self, scenario: ScenarioBase) -> str | None:
        if scenario.kind in ("cl2r", "iam-cl2r") or getattr(scenario, "memory_per_class", 0) > 0:
            return ("with a replay memory incremental fine-tuning is exactly er (fine-tuning with cross-entropy on "
                    "the new data and the memory, same seeds): see er")
        return fine_tuning_reason(self.name, scenario)

    def before_step(self, model: Network, ctx: StepContext) -> None:
        start_from_old(model, ctx)


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [IncrementalFineTuning]
