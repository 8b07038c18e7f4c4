"""The scenario protocol: a step is one model update (which classes, how much data, which architecture, how
initialised), and each scenario kind (``scenarios.kinds``) expands into an ordered list of steps
(``steps(num_classes)``).

Class ids are positions in the scenario's class order (``0..C-1``); every kind grows classes
in that order, so the classes a model knows at a step are always ``0..seen_classes-1``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from benchbackcompat.errors import BenchError

Init = Literal["scratch", "same-as-first", "previous", "pretrained", "zoo"]


@dataclass(frozen=True)
class Pretrained:
    """A model trained elsewhere: on the first ``num_classes`` classes of the pretraining pool."""

    index: int
    num_classes: int
    backbone: str


@dataclass(frozen=True)
class Step:
    """One model update of a scenario."""

    index: int
    classes: tuple[int, int]  # [start, stop) of the classes whose images this step trains on
    seen_classes: int  # classes 0..seen_classes-1 are known to the model of this step
    data_fraction: float  # fraction of the images of those classes (ext-data's old model: 0.3)
    backbone: str
    init: Init
    pretrained: Pretrained | None = None
    replay: bool = False  # batches are half replay memory, half new data

    def to_dict(self) -> dict:
        return asdict(self)


def equal_increments(total: int, parts: int, first: int | None = None) -> list[int]:
    """Cumulative class counts: ``first`` classes, then the rest in ``parts`` equal increments."""
    start = 0 if first is None else first
    rest = total - start
    if parts < 1 or rest < parts or (first is not None and first < 1):
        raise BenchError(f"cannot split {total} classes into {'an initial task of ' + str(first) + ' and ' if first else ''}"
                         f"{parts} increments; use more classes (data.num_classes) or fewer steps")
    if rest % parts:
        raise BenchError(
            f"{rest} classes do not split into {parts} equal increments; choose data.num_classes so that it divides evenly"
        )
    size = rest // parts
    return ([start] if first else []) + [start + size * (i + 1) for i in range(parts)]

