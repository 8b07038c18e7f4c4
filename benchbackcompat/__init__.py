"""benchbackcompat: one harness for backward-compatible representation learning."""
from __future__ import annotations

import importlib

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("benchbackcompat")
"""Marker for plugin hook implementations: ``@benchbackcompat.hookimpl``."""

API = ("run", "load_results", "load_matrix_entries", "export_results")  # from benchbackcompat.api, imported on first use


def __getattr__(name: str):
    """``benchbackcompat.run(...)``, ``benchbackcompat.load_results`` and the rest of :mod:`benchbackcompat.api`,
    without importing torch for ``import benchbackcompat``."""
    if name in API:
        return getattr(importlib.import_module("benchbackcompat.api"), name)
    raise AttributeError(f"module 'benchbackcompat' has no attribute {name!r}")


__all__ = ["__version__", "hookimpl", *API]
