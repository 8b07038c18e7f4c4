"""Backbones (built-in CIFAR-size families and ``timm:<model>``), heads and the network wrapper."""
from __future__ import annotations

from benchbackcompat.models.heads import CosineHead, FixedHead, LinearHead, dsimplex, dsimplex_frobenius, etf
from benchbackcompat.models.network import HEADS, Network, NetworkOutput, build_network, count_parameters
from benchbackcompat.models.registry import BACKBONES, BackboneEntry, create_backbone, list_backbones

__all__ = [
    "BACKBONES",
    "HEADS",
    "BackboneEntry",
    "CosineHead",
    "FixedHead",
    "LinearHead",
    "Network",
    "NetworkOutput",
    "build_network",
    "count_parameters",
    "create_backbone",
    "dsimplex",
    "dsimplex_frobenius",
    "etf",
    "list_backbones",
]
