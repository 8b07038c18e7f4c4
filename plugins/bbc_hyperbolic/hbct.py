"""``hbct``: hyperbolic backward-compatible training on the Lorentz model (Bui et al., ICML'25).

L = CE(LorentzMLR(h_n), y) + lambda (L_entail(h_n; h_o) + L_contrast) (Eq. 13): the new embedding
must lie in the entailment cone of the frozen old one (Eq. 11) and is pulled to it by an
uncertainty-weighted RINCE on geodesic distances (Eq. 12). Clip zeta_t = 1.0 + 0.2 t; retrieval by
geodesic distance; P_com / P_up against Lorentz references.
"""
from __future__ import annotations

import benchbackcompat
from benchbackcompat.method import Method
from bbc_hyperbolic.common import HBCTBase


class HBCT(HBCTBase):
    name = "hbct"
    description = "HBCT: Lorentz MLR + entailment cone of the old embedding + uncertainty-weighted RINCE (geodesic)"


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [HBCT]
