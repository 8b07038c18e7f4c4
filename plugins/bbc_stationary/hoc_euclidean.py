"""``hoc-euclidean``: the HOC alignment loss with an ordinary learnable classifier.

The "HOC" baseline of the hyperbolic BCT paper, which removes the d-Simplex: L = lambda * CE(learnable
head) + (1 - lambda) * L_iNCE(phi_t, phi_ref) (Stationary-HOC Eqs. 3-5), phi_ref as in ``hoc``.
"""
from __future__ import annotations

from typing import Any, ClassVar

import benchbackcompat
from benchbackcompat.method import Method
from bbc_stationary.alignment import HocAlignment, HocTerms


class EuclideanHocParams(HocTerms):
    # HBCT paper, Sec. 5 (baseline tuning): 10 settings per baseline, lambda in [0, 1] and, for the contrastive ones, tau in
    # {0.5, 1.0}. HOC's lambda already lies in [0, 1] (it weighs the cross-entropy, 1 - lambda the alignment) and
    # its rho is an inverse temperature, so tau in {0.5, 1.0} is rho in {2, 1}: 5 x 2.
    grid: ClassVar[dict[str, list[Any]]] = {"lam": [0.1, 0.3, 0.5, 0.7, 0.9], "rho": [2.0, 1.0]}


class EuclideanHOC(HocAlignment):
    name = "hoc-euclidean"
    description = "learnable classifier + higher-order (InfoNCE) alignment to the frozen old model (HOC without the d-Simplex)"
    Params = EuclideanHocParams
    requires = ("trains",)


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [EuclideanHOC]
