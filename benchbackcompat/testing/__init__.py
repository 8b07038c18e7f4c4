"""Testing helpers for method authors: the conformance suite and its pytest plugin.

From a plugin's own tests::

    from benchbackcompat.testing import check_method

    def test_conformance(tmp_path):
        check_method("my-method", workdir=tmp_path)  # raises ConformanceError listing every failure

As a pytest plugin (opt-in): ``pytest -p benchbackcompat.testing.pytest_plugin --bbc-conformance my-method``
runs the suite on installed methods without writing a test; see :mod:`benchbackcompat.testing.pytest_plugin`.
"""
from __future__ import annotations

from benchbackcompat.testing.conformance import (
    CheckResult,
    Conformance,
    ConformanceError,
    ConformanceReport,
    check_method,
    installed_methods,
)
from benchbackcompat.testing.scenarios import tiny_scenario

__all__ = [
    "CheckResult", "Conformance", "ConformanceError", "ConformanceReport", "check_method", "installed_methods",
    "tiny_scenario",
]
