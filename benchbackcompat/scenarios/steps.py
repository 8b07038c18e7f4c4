"""The scenario protocol: each scenario kind expands into an ordered list of steps (``ScenarioBase.steps``).

``Step``, ``Pretrained`` and ``equal_increments`` live in ``benchbackcompat.step``; they are re-exported here,
where they were first defined.
"""
from __future__ import annotations

from benchbackcompat.config import ScenarioBase
from benchbackcompat.step import Init, Pretrained, Step, equal_increments

__all__ = ["Init", "Pretrained", "Step", "build_steps", "equal_increments"]


def build_steps(scenario: ScenarioBase, num_classes: int) -> list[Step]:
    """Expand a scenario configuration into its steps, for a training pool of ``num_classes`` classes."""
    return scenario.steps(num_classes)
