"""The scenario protocol: each scenario kind expands into an ordered list of steps.

Class ids are positions in the scenario's class order (``0..C-1``); every kind grows classes
in that order, so the classes a model knows at a step are always ``0..seen_classes-1``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from benchbackcompat.config import (
    CL2R,
    IAMCL2R,
    Both,
    ExtClass,
    ExtData,
    ModelZoo,
    MultiStep,
    NewArch,
    ScenarioBase,
)
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


def _architectures(scenario: ScenarioBase) -> tuple[str, str]:
    archs = getattr(scenario, "architectures", None) or [scenario.model.backbone] * 2
    if len(archs) != 2:
        raise BenchError(f"{scenario.kind}: architectures must list exactly [old, new], got {archs}")
    return archs[0], archs[1]


def build_steps(scenario: ScenarioBase, num_classes: int) -> list[Step]:
    """Expand a scenario configuration into its steps, for a training pool of ``num_classes`` classes."""
    backbone = scenario.model.backbone
    if isinstance(scenario, ExtData | NewArch):
        old, new = _architectures(scenario)
        if isinstance(scenario, NewArch) and old == new:
            raise BenchError("new-arch: architectures must name two different backbones, e.g. [\"resnet18\", \"timm:vit_base_patch16_224\"]")
        fraction = scenario.old_fraction if isinstance(scenario, ExtData) else 1.0
        return [
            Step(0, (0, num_classes), num_classes, fraction, old, "scratch"),
            Step(1, (0, num_classes), num_classes, 1.0, new, "scratch"),
        ]
    if isinstance(scenario, ExtClass | Both):
        old, new = _architectures(scenario)
        first = max(1, round(num_classes * scenario.old_class_fraction))
        if first >= num_classes:
            raise BenchError(f"{scenario.kind}: old_class_fraction leaves no new classes out of {num_classes}")
        return [
            Step(0, (0, first), first, 1.0, old, "scratch"),
            Step(1, (0, num_classes), num_classes, 1.0, new, "scratch"),
        ]
    if isinstance(scenario, MultiStep):
        stops = equal_increments(num_classes, scenario.num_models)
        replay = scenario.memory_per_class > 0  # new classes + replay memory instead of all classes so far
        return [
            Step(t, (stops[t - 1] if replay and t else 0, stop), stop, 1.0, backbone, "scratch" if t == 0 else scenario.init,
                 replay=replay and t > 0)
            for t, stop in enumerate(stops)
        ]
    if isinstance(scenario, IAMCL2R):
        return _iam_cl2r_steps(scenario, num_classes)
    if isinstance(scenario, CL2R):
        stops = _cl2r_stops(scenario, num_classes)
        return [
            Step(t, (0 if t == 0 else stops[t - 1], stop), stop, 1.0, backbone, "scratch" if t == 0 else "previous", replay=t > 0)
            for t, stop in enumerate(stops)
        ]
    if isinstance(scenario, ModelZoo):
        return [Step(t, (0, num_classes), num_classes, 1.0, name, "zoo") for t, name in enumerate(scenario.zoo)]
    raise BenchError(f"unsupported scenario kind {scenario.kind!r}")


def _cl2r_stops(scenario: CL2R, num_classes: int) -> list[int]:
    first = max(1, round(num_classes * scenario.initial_class_fraction))
    return equal_increments(num_classes, scenario.num_tasks - 1, first=first)


def _iam_cl2r_steps(scenario: IAMCL2R, num_classes: int) -> list[Step]:
    """CL2R where task 1 and each replacement task start from a model pretrained elsewhere (IAM-CL2R)."""
    stops = _cl2r_stops(scenario, num_classes)
    archs = scenario.pretrain_architectures or [scenario.model.backbone] * len(scenario.pretrain_classes)
    starts = {1: 0, **{task: i + 1 for i, task in enumerate(scenario.replacements)}}  # 1-indexed task -> pretrained model
    steps, backbone = [], archs[0]
    for t, stop in enumerate(stops):
        pretrained = None
        if t + 1 in starts:
            index = starts[t + 1]
            backbone = archs[index]
            pretrained = Pretrained(index, scenario.pretrain_classes[index], backbone)
        steps.append(
            Step(t, (0 if t == 0 else stops[t - 1], stop), stop, 1.0, backbone,
                 "pretrained" if pretrained else "previous", pretrained, replay=t > 0)
        )
    return steps
