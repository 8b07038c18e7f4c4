"""``hoc``: d-Simplex-HOC (Biondi et al., CVPR'24 / "A Stationary Representation is All You Need").

A fixed d-Simplex over K pre-allocated classes (feature = bias-free projection to K-1 dims) and
L_HOC = lambda * CE over all K logits + (1 - lambda) * L_iNCE(phi_t, phi_ref) (Eqs. 2-5), where
phi_ref is the frozen previous model, or the incoming pretrained model at task 1 and at the
replacement tasks of IAM-CL2R.
"""
from __future__ import annotations

import benchbackcompat
from benchbackcompat.method import Method
from bbc_stationary.alignment import HocAlignment, HocTerms
from bbc_stationary.common import FixedHeadMethod, FixedParams


class HocParams(FixedParams, HocTerms):
    pass


class DSimplexHOC(FixedHeadMethod, HocAlignment):
    name = "hoc"
    description = "d-Simplex fixed classifier + higher-order (InfoNCE) alignment to the frozen old model (d-Simplex-HOC)"
    Params = HocParams


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [DSimplexHOC]
