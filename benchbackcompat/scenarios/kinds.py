"""The scenario kinds: each kind's class holds its fields, its steps (``steps(num_classes)``), its traits, the
statistics it reports and ranks by, and what it measures; ``NamedScenario`` is a kind under the name a preset gives
it (``--scenario both``).

The leaf models a kind is made of (data, training, model, evaluation options) are in ``benchbackcompat.config``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, Union

from pydantic import Field, model_serializer, model_validator

from benchbackcompat.config import (
    CLASSES_MAX,
    IMAGES_MAX,
    MODELS_MAX,
    BackfillConfig,
    DataConfig,
    IndexConfig,
    ModelConfig,
    Protocol,
    RetrievalMetric,
    SelectionRule,
    StrictModel,
    TrainConfig,
    Trait,
)
from benchbackcompat import evaluations
from benchbackcompat.errors import BenchError
from benchbackcompat.scenarios.steps import Pretrained, Step, equal_increments


def _without_unset_options(data: dict[str, Any]) -> dict[str, Any]:
    """Without the evaluation options the dump, and so every key hashed from it, is what it was before they existed."""
    for option in evaluations.NAMES:
        if data.get(option) is None:
            data.pop(option, None)
    return data



class ScenarioBase(StrictModel):
    """Fields every scenario kind shares."""

    description: str = ""
    data: DataConfig = Field(default_factory=DataConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    protocol: Protocol = "loo"
    eval_split: Literal["test", "open"] = Field("test", description="held-out images of the training classes, or the open-set pool")
    metrics: list[RetrievalMetric] = Field(default_factory=lambda: ["cmc@1", "map"], min_length=1)
    verification_pairs: int = Field(3000, ge=10, le=IMAGES_MAX, description="positive (and negative) pairs for the verification protocol")
    backfill: BackfillConfig | None = Field(None, description="backfilling curves of every consecutive update (nn or loo)")
    index: IndexConfig | None = Field(None, description="cross- and self-tests through a FAISS index too (nn or loo)")
    measures: ClassVar[str] = ""  # what the kind measures, one phrase (leaderboard pages)
    single_update: ClassVar[bool] = False  # one update old -> new (P_com, P_up) rather than a sequence of models
    family: ClassVar[str] = "sequence"  # conformance runs one kind per family
    statistics: ClassVar[tuple[str, ...]] = ("AC", "AA", "ACA")  # the leaderboard's statistics per retrieval metric
    ranking: ClassVar[tuple[str, str]] = ("AC", "AA")  # the primary statistic of the kind, then its tie-breaker
    example: ClassVar[dict[str, Any]] = {}  # the kind's options of a tiny instance (testing.scenarios)
    untrained_fields: ClassVar[tuple[str, ...]] = ("description", "metrics", "verification_pairs", *evaluations.NAMES)  # training never reads them

    @model_validator(mode="after")
    def _options_evaluable(self) -> Self:
        ranked = self.protocol in ("nn", "loo")
        if self.backfill is not None and (not ranked or self.scores_seen_classes_only()):
            raise ValueError("backfill needs protocol \"nn\" or \"loo\" with every class evaluated (a mixed gallery "
                             "of single items, scored on one class set at every refresh step)")
        if self.index is not None and (not ranked or not any(m.startswith("cmc@") for m in self.metrics)):
            raise ValueError("index needs protocol \"nn\" or \"loo\" and a cmc@k metric (an index returns top-k lists)")
        return self

    @model_serializer(mode="wrap")
    def _omit_unset_options(self, handler: Any) -> dict[str, Any]:
        return _without_unset_options(handler(self))

    def as_trained(self) -> ScenarioBase:
        """This scenario with the fields training never reads at their defaults, its data's too: scenarios that differ
        only in their words and in how they evaluate (multi-step and its seen-classes variant, a larger test set)
        have one such view, so their cells share their trained models."""
        return self.with_defaults(self.untrained_fields, data=self.data.as_trained())

    def steps(self, num_classes: int) -> list[Step]:
        """The scenario's model updates, for a training pool of ``num_classes`` classes."""
        raise BenchError(f"unsupported scenario kind {getattr(self, 'kind', type(self).__name__)!r}")

    def gallery_classes(self, steps: list[Step]) -> list[int] | None:
        """Per gallery model k, the number of classes (labels below it) that its entries are scored on; None:
        every entry on every class."""
        return None

    @property
    def traits(self) -> frozenset[Trait]:
        """What the scenario offers a method: models that are trained, tasks of new classes fine-tuned one
        after the other (incremental), a replay memory, every model trained on all the data seen so far
        (cumulative), one architecture for every model."""
        return frozenset({"trains", "cumulative", "same-architecture"})

    def lacks(self, trait: Trait, method: str) -> str:
        """Why ``method``, which needs ``trait``, cannot run this scenario (one sentence)."""
        kind = getattr(self, "kind", "this")
        archs = getattr(self, "architectures", None) or []
        return {
            "trains": f"{method} trains each new model; {kind} models are already trained, not trained here",
            "incremental": f"{method} fine-tunes task after task with a replay memory; it runs in cl2r and iam-cl2r, "
                           f"not {kind}",
            "replay": f"{method} needs a replay memory; it runs in cl2r, iam-cl2r or with memory_per_class > 0, "
                      f"not {kind} without one",
            "cumulative": f"{method} trains every model alone on all the data seen so far; this {kind} scenario trains "
                          "on new classes and a replay memory",
            "same-architecture": f"{method} fine-tunes the old model, but {kind} changes the architecture "
                                 f"({' -> '.join(archs)})",
        }[trait]

    @property
    def selection_rule(self) -> SelectionRule:
        """How a grid point is chosen on the validation split for this kind (benchbackcompat.execution.selection)."""
        return "ac-then-aa"

    def train_config(self, step: int) -> TrainConfig:
        """The training configuration of ``step``."""
        return self.train

    def replay_per_class(self) -> int:
        """Images per class a step adds to the replay memory after training (0: no memory)."""
        return 0

    def reports_update_gain(self) -> bool:
        """Whether each step's upper bound is trained, for the update gain per pair (CoReS Eq. 3)."""
        return False

    def backbone_names(self) -> list[str]:
        """Every backbone name the scenario builds (checked against the registry before any training)."""
        return [self.model.backbone]

    def pretrains_elsewhere(self) -> bool:
        """Whether models are pretrained elsewhere (on another pool) before the scenario's steps."""
        return False

    def scores_seen_classes_only(self) -> bool:
        """Whether entry C[t][k] is scored on gallery model k's classes only (else on every class)."""
        return False


class SingleUpdateBase(ScenarioBase):
    architectures: list[str] | None = Field(None, description="[old, new] backbones; None uses model.backbone for both")
    new_train: TrainConfig | None = Field(None, description="training of the new model when it differs (HBCT: ViT fine-tuning)")
    single_update: ClassVar[bool] = True
    family: ClassVar[str] = "single update"
    statistics: ClassVar[tuple[str, ...]] = ("old_self", "reference_self", "self", "cross", "p_up", "p_com")
    ranking: ClassVar[tuple[str, str]] = ("p_com", "cross")

    def old_and_new(self) -> tuple[str, str]:
        """The old and the new backbone."""
        archs = self.architectures or [self.model.backbone] * 2
        if len(archs) != 2:
            raise BenchError(f"{self.kind}: architectures must list exactly [old, new], got {archs}")
        return archs[0], archs[1]

    def update(self, num_classes: int, old_classes: int, old_fraction: float = 1.0) -> list[Step]:
        """The old model on the first ``old_classes`` classes (``old_fraction`` of their images), the new one on all."""
        old, new = self.old_and_new()
        return [Step(0, (0, old_classes), old_classes, old_fraction, old, "scratch"),
                Step(1, (0, num_classes), num_classes, 1.0, new, "scratch")]

    def new_classes_update(self, num_classes: int, fraction: float) -> list[Step]:
        """The old model on the first ``fraction`` of the classes, the new one on all."""
        first = max(1, round(num_classes * fraction))
        if first >= num_classes:
            raise BenchError(f"{self.kind}: old_class_fraction leaves no new classes out of {num_classes}")
        return self.update(num_classes, first)

    @property
    def traits(self) -> frozenset[Trait]:
        same = self.architectures is None or len(set(self.architectures)) == 1
        return frozenset({"trains", "cumulative", *(("same-architecture",) if same else ())})

    @property
    def selection_rule(self) -> SelectionRule:
        return "hbct"

    def train_config(self, step: int) -> TrainConfig:
        return self.new_train if step > 0 and self.new_train is not None else self.train

    def backbone_names(self) -> list[str]:
        return [self.model.backbone, *(self.architectures or [])]


class ExtData(SingleUpdateBase):
    """Old model on a random fraction of the training images, new model on all (HBCT: 30%)."""

    kind: Literal["ext-data"] = "ext-data"
    measures: ClassVar[str] = "one update, more data of the same classes"
    example: ClassVar[dict[str, Any]] = {"old_fraction": 0.5}
    old_fraction: float = Field(0.3, gt=0, lt=1)

    def steps(self, num_classes: int) -> list[Step]:
        return self.update(num_classes, num_classes, self.old_fraction)


class ExtClass(SingleUpdateBase):
    """Old model on the first fraction of the classes, new model on all (HBCT: 50%)."""

    kind: Literal["ext-class"] = "ext-class"
    measures: ClassVar[str] = "one update, new classes added"
    old_class_fraction: float = Field(0.5, gt=0, lt=1)

    def steps(self, num_classes: int) -> list[Step]:
        return self.new_classes_update(num_classes, self.old_class_fraction)


class NewArch(SingleUpdateBase):
    """Same data, new architecture."""

    kind: Literal["new-arch"] = "new-arch"
    measures: ClassVar[str] = "one update, a new architecture on the same data"
    example: ClassVar[dict[str, Any]] = {"architectures": ["convnet-s", "convnet-m"]}

    def steps(self, num_classes: int) -> list[Step]:
        old, new = self.old_and_new()
        if old == new:
            raise BenchError("new-arch: architectures must name two different backbones, e.g. [\"resnet18\", \"timm:vit_base_patch16_224\"]")
        return self.update(num_classes, num_classes)


class Both(SingleUpdateBase):
    """Old architecture on the first fraction of classes, new architecture on all."""

    kind: Literal["both"] = "both"
    measures: ClassVar[str] = "one update, new classes and a new architecture"
    example: ClassVar[dict[str, Any]] = {"architectures": ["convnet-s", "convnet-m"]}
    old_class_fraction: float = Field(0.5, gt=0, lt=1)

    def steps(self, num_classes: int) -> list[Step]:
        return self.new_classes_update(num_classes, self.old_class_fraction)


class MultiStep(ScenarioBase):
    """T models, each trained from scratch on equal cumulative class increments (CoReS, PSP/LSP)."""

    kind: Literal["multi-step"] = "multi-step"
    measures: ClassVar[str] = "a sequence of T models trained from scratch on growing class sets"
    num_models: int = Field(5, ge=2, le=MODELS_MAX, description="T, the number of models (upgrades + 1)")
    init: Literal["scratch", "same-as-first", "previous"] = "scratch"
    memory_per_class: int = Field(
        0, ge=0, le=IMAGES_MAX, description="0: each model trains on all classes so far; > 0: on the new classes plus a replay "
        "memory of this many images per class (the -ER variants)"
    )
    metrics: list[RetrievalMetric] = Field(default_factory=lambda: ["cmc@1"], min_length=1)
    update_gain: bool = Field(
        False, description="also train each step's upper bound (the model trained alone with the recipe of the "
        "method's first model; shared) and report the update gain per pair (CoReS Eq. 3): T-1 more models per recipe",
    )
    eval_classes: Literal["all", "seen"] = Field(
        "all", description="all: score every entry on the test images of every class; seen: score C[t][k] only on "
        "those of the classes gallery model k was trained on (PSP/LSP's Theorem 1 covers those; the paper does not "
        "say which it evaluates)",
    )

    example: ClassVar[dict[str, Any]] = {"num_models": 3}
    untrained_fields: ClassVar[tuple[str, ...]] = (*ScenarioBase.untrained_fields, "eval_classes")

    @model_validator(mode="after")
    def _seen_classes_evaluable(self) -> MultiStep:
        if self.eval_classes == "seen" and (self.protocol != "loo" or self.update_gain):
            raise ValueError("eval_classes = \"seen\" needs protocol = \"loo\" and no update_gain (the upper bounds' "
                             "self-tests have no gallery model to take the classes from)")
        return self

    @model_serializer(mode="wrap")
    def _omit_all_classes(self, handler: Any) -> dict[str, Any]:
        """With every class evaluated (the default) the dump, and so every key hashed from it, is what it was before
        the field existed."""
        data = _without_unset_options(handler(self))
        if data.get("eval_classes") == "all":
            data.pop("eval_classes")
        return data

    def gallery_classes(self, steps: list[Step]) -> list[int] | None:
        """The classes each entry's gallery model k saw (labels below ``steps[k].seen_classes``), for ``seen``."""
        return [step.seen_classes for step in steps] if self.eval_classes == "seen" else None

    def replay_per_class(self) -> int:
        return self.memory_per_class

    def reports_update_gain(self) -> bool:
        return self.update_gain

    def scores_seen_classes_only(self) -> bool:
        return self.eval_classes == "seen"

    @property
    def traits(self) -> frozenset[Trait]:
        return frozenset({"trains", "same-architecture", "replay" if self.memory_per_class > 0 else "cumulative"})

    def steps(self, num_classes: int) -> list[Step]:
        stops = equal_increments(num_classes, self.num_models)
        replay = self.memory_per_class > 0  # new classes + replay memory instead of all classes so far
        return [
            Step(t, (stops[t - 1] if replay and t else 0, stop), stop, 1.0, self.model.backbone,
                 "scratch" if t == 0 else self.init, replay=replay and t > 0)
            for t, stop in enumerate(stops)
        ]


class CL2R(ScenarioBase):
    """An initial task, then equal class increments, fine-tuning with a replay memory (CL2R)."""

    kind: Literal["cl2r"] = "cl2r"
    measures: ClassVar[str] = "continual learning: fine-tuning on class increments with a replay memory"
    num_tasks: int = Field(7, ge=2, le=MODELS_MAX)
    initial_class_fraction: float = Field(0.1, gt=0, lt=1)
    memory_per_class: int = Field(20, ge=0, le=IMAGES_MAX)
    protocol: Protocol = "template"
    eval_split: Literal["test", "open"] = "open"
    metrics: list[RetrievalMetric] = Field(default_factory=lambda: ["top1"], min_length=1)

    example: ClassVar[dict[str, Any]] = {"num_tasks": 3, "initial_class_fraction": 0.34, "memory_per_class": 4}

    def replay_per_class(self) -> int:
        return self.memory_per_class

    @property
    def traits(self) -> frozenset[Trait]:
        return frozenset({"trains", "incremental", "replay", "same-architecture"})

    def stops(self, num_classes: int) -> list[int]:
        """The classes known after each task: an initial fraction, then equal increments."""
        first = max(1, round(num_classes * self.initial_class_fraction))
        return equal_increments(num_classes, self.num_tasks - 1, first=first)

    def steps(self, num_classes: int) -> list[Step]:
        stops = self.stops(num_classes)
        return [
            Step(t, (0 if t == 0 else stops[t - 1], stop), stop, 1.0, self.model.backbone,
                 "scratch" if t == 0 else "previous", replay=t > 0)
            for t, stop in enumerate(stops)
        ]


class IAMCL2R(CL2R):
    """CL2R starting from a model pretrained elsewhere, replaced at given tasks by better ones (IAM-CL2R)."""

    kind: Literal["iam-cl2r"] = "iam-cl2r"  # type: ignore[assignment]
    measures: ClassVar[str] = "continual learning from models pretrained elsewhere, replaced by better ones at given tasks"
    replacements: list[Annotated[int, Field(ge=2, le=MODELS_MAX)]] = Field(default_factory=lambda: [3, 5], description="1-indexed tasks that start from a new pretrained model")
    pretrain_classes: list[Annotated[int, Field(ge=2, le=CLASSES_MAX)]] = Field(
        default_factory=lambda: [100, 300, 600], description="classes of the pretraining pool seen by each pretrained model"
    )
    pretrain_architectures: list[str] | None = Field(None, description="backbone of each pretrained model; None = model.backbone")
    pretrain: TrainConfig = Field(default_factory=TrainConfig)
    example: ClassVar[dict[str, Any]] = {
        **CL2R.example, "replacements": [3], "pretrain_classes": [3, 6],
        "pretrain": {"epochs": 1, "batch_size": 16, "lr": 0.01, "eval_batch_size": 256},
    }

    def steps(self, num_classes: int) -> list[Step]:
        """CL2R where task 1 and each replacement task start from a model pretrained elsewhere."""
        stops = self.stops(num_classes)
        archs = self.pretrain_architectures or [self.model.backbone] * len(self.pretrain_classes)
        starts = {1: 0, **{task: i + 1 for i, task in enumerate(self.replacements)}}  # 1-indexed task -> pretrained model
        steps, backbone = [], archs[0]
        for t, stop in enumerate(stops):
            pretrained = None
            if t + 1 in starts:
                index = starts[t + 1]
                backbone = archs[index]
                pretrained = Pretrained(index, self.pretrain_classes[index], backbone)
            steps.append(Step(t, (0 if t == 0 else stops[t - 1], stop), stop, 1.0, backbone,
                              "pretrained" if pretrained else "previous", pretrained, replay=t > 0))
        return steps

    def backbone_names(self) -> list[str]:
        return [self.model.backbone, *(self.pretrain_architectures or [])]

    def pretrains_elsewhere(self) -> bool:
        return True

    @model_validator(mode="after")
    def _replacements_fit(self) -> IAMCL2R:
        if len(self.pretrain_classes) != len(self.replacements) + 1:
            raise ValueError(
                f"pretrain_classes needs {len(self.replacements) + 1} entries (the start model and one per replacement), "
                f"got {len(self.pretrain_classes)}"
            )
        bad = [r for r in self.replacements if not 1 < r <= self.num_tasks]
        if bad or sorted(set(self.replacements)) != self.replacements:
            raise ValueError(f"replacements must be increasing tasks in 2..{self.num_tasks}, got {self.replacements}")
        if self.pretrain_architectures is not None and len(self.pretrain_architectures) != len(self.pretrain_classes):
            raise ValueError("pretrain_architectures needs one backbone per pretrained model")
        return self


class ModelZoo(ScenarioBase):
    """A sequence of already-trained models, no training (architecture upgrades with public weights)."""

    kind: Literal["model-zoo"] = "model-zoo"
    measures: ClassVar[str] = "a sequence of already-trained models (no training)"
    zoo: list[str] = Field(
        min_length=2, description="model names in update order: timm:<model>, torchvision:<model>[.<WEIGHTS>] or a built-in backbone"
    )
    weights: dict[str, Path] = Field(default_factory=dict, description="local checkpoint (encoder and classifier) per model name")
    pretrained: bool = Field(True, description="load the libraries' pretrained weights (False: random init, to test plumbing)")
    classes: int = Field(
        1000, ge=2, le=CLASSES_MAX, description="outputs of every zoo classifier, one shared label space in one order (ImageNet-1k: 1000)"
    )
    metrics: list[RetrievalMetric] = Field(default_factory=lambda: ["cmc@1"], min_length=1)

    family: ClassVar[str] = "already trained"
    example: ClassVar[dict[str, Any]] = {"zoo": ["convnet-s", "convnet-m"], "pretrained": False}

    def backbone_names(self) -> list[str]:
        return [self.model.backbone, *self.zoo]

    @property
    def traits(self) -> frozenset[Trait]:
        return frozenset({"cumulative"})  # already trained elsewhere, each on all its classes

    def steps(self, num_classes: int) -> list[Step]:
        return [Step(t, (0, num_classes), num_classes, 1.0, name, "zoo") for t, name in enumerate(self.zoo)]


# The kinds, listed once: in order of preference within a family (conformance runs the first supported one of each).
KINDS: tuple[type[ScenarioBase], ...] = (ExtClass, Both, ExtData, NewArch, CL2R, MultiStep, IAMCL2R, ModelZoo)
SCENARIO_CLASSES: dict[str, type[ScenarioBase]] = {cls.model_fields["kind"].default: cls for cls in KINDS}
SCENARIO_KINDS = tuple(SCENARIO_CLASSES)
ScenarioConfig = Annotated[Union[KINDS], Field(discriminator="kind")]  # one of the kinds, told apart by ``kind``


def kind_class(kind: str) -> type[ScenarioBase]:
    """The class of a scenario kind, for its declarations (``ScenarioBase`` for an unknown kind, e.g. of a record)."""
    return SCENARIO_CLASSES.get(kind, ScenarioBase)


class NamedScenario(StrictModel):
    """A scenario of a preset, under the name the CLI uses (``--scenario both``)."""

    name: str
    config: ScenarioConfig
