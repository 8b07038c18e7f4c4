"""``hoc-euclidean``: the HOC alignment loss with an ordinary learnable classifier.

The "HOC" baseline of the hyperbolic BCT paper, which removes the d-Simplex: L = lambda * CE(learnable
head) + (1 - lambda) * L_iNCE(phi_t, phi_ref) (Stationary-HOC Eqs. 3-5), phi_ref as in ``hoc``.
"""
from __future__ import annotations

import benchbackcompat
from benchbackcompat.method import Method
from bbc_stationary.alignment import HocAlignment, HocTerms


class EuclideanHOC(HocAlignment):
    name = "hoc-euclidean"
    description = "learnable classifier + higher-order (InfoNCE) alignment to the frozen old model (HOC without the d-Simplex)"
    Params = HocTerms


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [EuclideanHOC]
