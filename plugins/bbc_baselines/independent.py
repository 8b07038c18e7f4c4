"""``independent``: every model trained alone with cross-entropy, no compatibility term.

The reference that should not be compatible (independently initialised networks learn the same
subspaces in different bases, CoReS Sec. 1). Its models are the scenario's standard models, so
they are trained once and shared with every method that uses them.
"""
from __future__ import annotations

import benchbackcompat
from benchbackcompat.method import Method


class Independent(Method):
    name = "independent"
    description = "each model trained alone with cross-entropy (the incompatible reference)"
    standard_steps = "all"


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [Independent]
