"""Scenarios: the update protocols (the kinds and their steps) and their data.

The public names, for plugins and scripts: the scenario kinds and a step of one.
"""
from benchbackcompat.scenarios.kinds import (
    CL2R,
    IAMCL2R,
    SCENARIO_KINDS,
    Both,
    ExtClass,
    ExtData,
    ModelZoo,
    MultiStep,
    NamedScenario,
    NewArch,
    ScenarioBase,
    SingleUpdateBase,
    kind_class,
)
from benchbackcompat.scenarios.steps import Pretrained, Step

__all__ = ["CL2R", "IAMCL2R", "SCENARIO_KINDS", "Both", "ExtClass", "ExtData", "ModelZoo", "MultiStep", "NamedScenario",
           "NewArch", "Pretrained", "ScenarioBase", "SingleUpdateBase", "Step", "kind_class"]
