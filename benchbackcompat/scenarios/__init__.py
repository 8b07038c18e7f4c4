"""Scenarios: the update protocols (step sequences) and their data."""
from benchbackcompat.scenarios.steps import Pretrained, Step, build_steps

__all__ = ["Pretrained", "Step", "build_steps"]
