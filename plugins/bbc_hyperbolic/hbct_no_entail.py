"""``hbct-no-entail``: the HBCT ablation without the entailment cone, L = L_base + lambda L_contrast."""
from __future__ import annotations

import benchbackcompat
from benchbackcompat.method import Method
from bbc_hyperbolic.common import HBCTBase


class HBCTNoEntail(HBCTBase):
    name = "hbct-no-entail"
    description = "HBCT without the entailment loss: Lorentz MLR + uncertainty-weighted RINCE (geodesic)"
    entailment = False


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [HBCTNoEntail]
