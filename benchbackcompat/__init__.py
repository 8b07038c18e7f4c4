"""benchbackcompat: one harness for backward-compatible representation learning.

The public API (imported on first use, so that ``import benchbackcompat`` stays cheap):

- :func:`run`: train, evaluate and store a benchmark's cells; returns a DataFrame of their results.
- :func:`load_results`, :func:`load_matrix_entries`, :func:`export_results`: stored results as DataFrames and files.
- :class:`RunRequest`: what :func:`run` builds from its keywords (the command line builds the same).
- :data:`hookimpl`: the marker of plugin hook implementations.

Benchmark and tooling scripts (planning a grid, timing the training loop, extracting features) use
:mod:`benchbackcompat.tooling`.

The reference is docs/api.md.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from benchbackcompat.hookspecs import hookimpl
from benchbackcompat.version import __version__

_LAZY = {"run": "benchbackcompat.api", "load_results": "benchbackcompat.results.frames",
         "load_matrix_entries": "benchbackcompat.results.frames", "export_results": "benchbackcompat.results.frames",
         "RunRequest": "benchbackcompat.execution.request", "BenchError": "benchbackcompat.errors"}
__all__ = ["BenchError", "RunRequest", "__version__", "export_results", "hookimpl", "load_matrix_entries",
           "load_results", "run"]

if TYPE_CHECKING:
    from benchbackcompat.api import run
    from benchbackcompat.errors import BenchError
    from benchbackcompat.results.frames import export_results, load_matrix_entries, load_results
    from benchbackcompat.execution.request import RunRequest


def __getattr__(name: str):
    """The public API, imported on first use (``benchbackcompat.run`` imports torch only when it is called)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'benchbackcompat' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
