"""benchbackcompat: one harness for backward-compatible representation learning."""
from __future__ import annotations

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("benchbackcompat")
"""Marker for plugin hook implementations: ``@benchbackcompat.hookimpl``."""

__all__ = ["__version__", "hookimpl"]
