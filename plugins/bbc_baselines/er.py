"""``er``: fine-tuning with experience replay (the ER baseline of CL2R and IAM-CL2R).

Each task fine-tunes the previous model (or the incoming pretrained model at a replacement)
with cross-entropy on the new classes and the replay memory, half of each batch drawn from
the memory; the learnable classifier grows with the new classes. No old-model term.
"""
from __future__ import annotations

import benchbackcompat
from benchbackcompat.method import Method



class ExperienceReplay(Method):
    name = "er"
    requires = ("incremental",)
    description = "fine-tuning with cross-entropy and a replay memory (the CL2R/IAM-CL2R ER baseline)"


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [ExperienceReplay]
