"""Configuration models (pydantic v2, ``extra="forbid"``): run, scenario, training, data and model.

Precedence: these defaults < the preset file (its ``[defaults]``, then the scenario's own table) <
command-line flags. Every model rejects unknown keys, so a typo fails before any training.
"""
from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, Union, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from benchbackcompat.errors import BenchError
from benchbackcompat.step import Pretrained, Step, equal_increments


# Upper bounds of the numeric fields: far above any real run, low enough that every value fits the C integers and
# tensor sizes it becomes, so a typo fails validation naming its field instead of overflowing in the middle of a cell.
SEED_MAX = 2**32 - 1  # NumPy's seed range (Python's and torch's are wider)
CLASSES_MAX = 1_000_000
IMAGES_MAX = 10**7  # images per class, batch sizes
TIMEOUT_MAX = 10**7  # seconds (about 116 days): longer waits are none, and overflow the system's timers
EPOCHS_MAX = 100_000
STEPS_MAX = 10**9  # optimiser steps
MODELS_MAX = 1_000  # models in a sequence
PIXELS_MAX = 4_096  # image side
DIM_MAX = 65_536  # feature size
RATE_MAX = 1e3  # learning rates, weight decay


class StrictModel(BaseModel):
    """Base for every configuration model: unknown keys are errors, values are validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)

    def with_defaults(self, names: tuple[str, ...], **update: Any) -> Self:
        """A copy with the fields ``names`` at their defaults and ``update`` applied (not validated)."""
        fields = type(self).model_fields
        return self.model_copy(update={**{name: fields[name].get_default(call_default_factory=True) for name in names},
                                       **update})


class ValidationSplit(StrictModel):
    """A held-out part of the training data, used only to select hyperparameters."""

    fraction: float = Field(0.2, gt=0, lt=1, description="fraction of every training class held out for validation")
    seed: int = Field(0, ge=0, le=SEED_MAX, description="seed of the per-class draw")


class DataConfig(StrictModel):
    """Which images a scenario trains and evaluates on."""

    name: str = "embedded"
    root: Path | None = None
    eval_dataset: str | None = Field(
        None, description="dataset whose train/test splits are the open-set query/gallery (e.g. cifar10-jpeg)"
    )
    num_classes: int | None = Field(None, ge=2, le=CLASSES_MAX)
    train_per_class: int | None = Field(None, ge=1, le=IMAGES_MAX)
    test_per_class: int | None = Field(None, ge=1, le=IMAGES_MAX)
    image_size: int | None = Field(None, ge=8, le=PIXELS_MAX)
    open_classes: int | None = Field(None, ge=2, le=CLASSES_MAX)
    pretrain_classes: int | None = Field(None, ge=2, le=CLASSES_MAX)
    pretrain_per_class: int | None = Field(
        None, ge=1, le=IMAGES_MAX, description="embedded: images per class of the pretraining pool (None: train_per_class)")
    pretrain_resolution: int | None = Field(
        None, ge=2, le=PIXELS_MAX, description="embedded: the pretraining pool seen at this resolution, then resized to "
        "image_size (another image source, as ImageNet32 is for CIFAR; None: rendered like the training images)")
    pretrain_saturation: float | None = Field(
        None, ge=0, le=1, description="embedded: the pretraining pool's colour kept, 0 a greyscale camera (luminance "
        "alone), 1 the training images' colours (another image source; None: rendered like the training images)")
    seed: int = Field(0, ge=0, le=SEED_MAX, description="rendering seed of the embedded dataset")
    class_order_seed: int | None = Field(None, ge=0, le=SEED_MAX,
                                         description="shuffle the class order with this seed; None keeps label order")
    order_by_seed: bool = Field(
        False, description="each seed of a run shuffles the class order with its own seed (sets class_order_seed), "
        "so seeds vary which classes each model sees as well as the initialisation and data subsets"
    )
    eval_normalisation: Literal["train", "eval"] = Field(
        "train", description="normalise eval_dataset images with the training data's statistics (iamcl2r code) or "
                             "with its own (CoReS: CIFAR-10 test pairs with CIFAR-10 statistics)",
    )
    validation: ValidationSplit | None = Field(
        None, description="selection runs only: train on the training data minus this split, evaluate on it (never the test set)"
    )
    evaluation_fields: ClassVar[tuple[str, ...]] = ("test_per_class", "open_classes", "eval_dataset", "eval_normalisation")

    def as_trained(self) -> DataConfig:
        """This data with the fields that choose evaluation images at their defaults. Whatever they change in the
        training images too (embedded: ``open_classes`` shifts the pretraining pool) is keyed by the training
        images' own fingerprint (``ScenarioData.training_fingerprint``)."""
        return self.with_defaults(self.evaluation_fields)

    @model_serializer(mode="wrap")
    def _omit_unset_validation(self, handler: Any) -> dict[str, Any]:
        """Without a validation split (or pretrain_per_class, or order_by_seed) the dump, and so every key hashed from it, is what it was
        before the field existed."""
        data = handler(self)
        for optional in ("validation", "pretrain_per_class", "pretrain_resolution", "pretrain_saturation"):
            if data.get(optional) is None:
                data.pop(optional, None)
        if not data.get("order_by_seed", True):
            data.pop("order_by_seed", None)
        return data


class TrainConfig(StrictModel):
    """Optimisation of one model at one step."""

    epochs: int = Field(10, ge=1, le=EPOCHS_MAX)
    batch_size: int = Field(128, ge=2, le=IMAGES_MAX)
    optimizer: Literal["sgd", "adamw"] = "sgd"
    lr: float = Field(0.1, gt=0)  # no upper bound: inf makes a run diverge on purpose, and a float cannot overflow
    momentum: float = Field(0.9, ge=0, lt=1)
    nesterov: bool = False
    weight_decay: float = Field(5e-4, ge=0, le=RATE_MAX)
    schedule: Literal["cosine", "multistep", "constant"] = "cosine"
    milestones: list[Annotated[int, Field(ge=1, le=EPOCHS_MAX)]] = Field(
        default_factory=list, description="epochs at which multistep divides the lr")
    gamma: float = Field(0.1, gt=0, le=1)
    warmup_epochs: int = Field(0, ge=0, le=EPOCHS_MAX)
    min_lr: float = Field(0.0, ge=0, le=RATE_MAX)
    amp: Literal["auto", "bf16", "off"] = Field("auto", description="auto = bf16 autocast on CUDA and on CPUs with native bf16 (AVX512-BF16, AMX), fp32 otherwise")
    augment: bool = True
    crop_padding: int = Field(4, ge=0, le=PIXELS_MAX)
    flip: bool = True
    eval_batch_size: int = Field(1024, ge=1, le=IMAGES_MAX)
    min_steps: int = Field(0, ge=0, le=STEPS_MAX, description="train at least this many batches: a model whose data gives fewer "
                           "than min_steps / epochs batches an epoch trains more epochs (0: exactly `epochs`)")

    @model_validator(mode="after")
    def _milestones_within_epochs(self) -> TrainConfig:
        bad = [m for m in self.milestones if not 0 < m < self.epochs]
        if bad:
            raise ValueError(f"milestones {bad} must lie strictly between 0 and epochs={self.epochs}")
        return self

    @model_serializer(mode="wrap")
    def _omit_unset_min_steps(self, handler: Any) -> dict[str, Any]:
        """Without a step floor the dump, and so every key hashed from it, is what it was before the field existed."""
        data = handler(self)
        if data.get("min_steps") == 0:
            data.pop("min_steps")
        return data

    def for_batches(self, per_epoch: int) -> TrainConfig:
        """This training at ``per_epoch`` batches an epoch: epochs raised to ``ceil(min_steps / per_epoch)`` where
        that is more, the schedule's epoch counts (warm-up, milestones) stretched in proportion. A model needs SGD
        steps, not epochs: the small first models of a multi-step sequence see a few batches an epoch."""
        needed = -(-self.min_steps // max(1, per_epoch))
        if needed <= self.epochs:
            return self
        stretch = needed / self.epochs
        milestones = sorted({min(needed - 1, max(1, round(m * stretch))) for m in self.milestones})
        return self.model_copy(update={"epochs": needed, "milestones": milestones,
                                       "warmup_epochs": round(self.warmup_epochs * stretch)})


class ModelConfig(StrictModel):
    """Architecture of the models a scenario trains (a scenario may override it per step)."""

    backbone: str = "resnet18"
    embedding_dim: int | None = Field(128, ge=2, le=DIM_MAX, description='projection after the backbone; "none" keeps its features')
    pretrained: dict[str, bool | Path] = Field(
        default_factory=dict, description="weights per backbone name: true (timm's published weights, from its cache or "
        "downloaded) or a local checkpoint; absent: random initialisation (HBCT: ViT-B/16 from ImageNet-21k)",
    )
    input_size: dict[str, Annotated[int, Field(ge=8, le=PIXELS_MAX)]] = Field(
        default_factory=dict, description="input size per backbone name when it differs from the data's: the images "
        "are resized on the device, bilinear (HBCT: 224 px for the ViT-B/16 on 32 px CIFAR-100)",
    )

    @field_validator("embedding_dim", mode="before")
    @classmethod
    def _none(cls, value: Any) -> Any:
        """TOML has no null: ``embedding_dim = "none"`` keeps the backbone's features."""
        return None if isinstance(value, str) and value.strip().lower() in ("none", "null") else value


class BackfillConfig(StrictModel):
    """Backfilling curves (Hot-Refresh, ICLR 2022): the gallery re-embedded by the new model in ``steps`` equal
    batches while the new model serves queries, in each of ``orders``; the query-new accuracy after each batch and
    the area under the curve (FastFill, ICLR 2023). Off unless set."""

    steps: int = Field(10, ge=1, le=1000, description="batches of the refresh: the curve has steps + 1 points, 0 to 100%")
    orders: list[Literal["random", "class-distance"]] = Field(
        default_factory=lambda: ["random", "class-distance"], min_length=1,
        description="refresh orders: random, or the old embeddings least similar to their class template first")


class IndexConfig(StrictModel):
    """Retrieval through a FAISS index trained on the gallery features of each entry (``benchbackcompat[faiss]``),
    reported beside the exact scores. Off unless set."""

    kinds: list[Literal["flat", "ivf-pq"]] = Field(default_factory=lambda: ["flat", "ivf-pq"], min_length=1)
    nlist: int = Field(16, ge=1, le=1 << 20, description="IVF cells (at most gallery size / 39, faiss's training floor)")
    nprobe: int = Field(4, ge=1, le=1 << 20, description="IVF cells visited per query")
    pq_m: int = Field(8, ge=1, le=DIM_MAX, description="PQ sub-quantisers (features zero-padded to a multiple)")
    pq_bits: int = Field(8, ge=1, le=16, description="bits per PQ code (at most log2 of the gallery size)")


def _without_unset_options(data: dict[str, Any]) -> dict[str, Any]:
    """Without the evaluation options the dump, and so every key hashed from it, is what it was before they existed."""
    for option in ("backfill", "index"):
        if data.get(option) is None:
            data.pop(option, None)
    return data


Protocol = Literal["loo", "nn", "template", "verification"]
SelectionRule = Literal["hbct", "ac-then-aa"]
RetrievalMetric = Literal["cmc@1", "cmc@5", "map", "map@r", "top1", "verification"]
Trait = Literal["trains", "incremental", "replay", "cumulative", "same-architecture"]


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
    untrained_fields: ClassVar[tuple[str, ...]] = ("description", "metrics", "verification_pairs", "backfill", "index")  # training never reads them

    @model_validator(mode="after")
    def _options_evaluable(self) -> Self:
        ranked = self.protocol in ("nn", "loo")
        if self.backfill is not None and (not ranked or getattr(self, "eval_classes", "all") != "all"):
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

    @property
    def traits(self) -> frozenset[Trait]:
        return frozenset({"cumulative"})  # already trained elsewhere, each on all its classes

    def steps(self, num_classes: int) -> list[Step]:
        return [Step(t, (0, num_classes), num_classes, 1.0, name, "zoo") for t, name in enumerate(self.zoo)]


ScenarioConfig = Annotated[
    Union[ExtData, ExtClass, NewArch, Both, MultiStep, CL2R, IAMCL2R, ModelZoo], Field(discriminator="kind")
]
SCENARIO_CLASSES: dict[str, type[ScenarioBase]] = {  # in order of preference within a family (conformance)
    cls.model_fields["kind"].default: cls for cls in (ExtClass, Both, ExtData, NewArch, CL2R, MultiStep, IAMCL2R, ModelZoo)
}
SCENARIO_KINDS = tuple(SCENARIO_CLASSES)


def kind_class(kind: str) -> type[ScenarioBase]:
    """The class of a scenario kind, for its declarations (``ScenarioBase`` for an unknown kind, e.g. of a record)."""
    return SCENARIO_CLASSES.get(kind, ScenarioBase)


SCENARIOS = get_args(ScenarioConfig)[0]  # the union of the kinds, as a field's annotation holds it


class NamedScenario(StrictModel):
    """A scenario of a preset, under the name the CLI uses (``--scenario both``)."""

    name: str
    config: ScenarioConfig


class SelectionConfig(StrictModel):
    """How grid points are compared: the validation split and the tolerance of HBCT's rule."""

    validation: ValidationSplit = Field(default_factory=ValidationSplit)
    tolerance: float = Field(
        0.0, ge=0, le=1, description="single updates: a setting qualifies if its P_up is at most this far below the reference's (0)"
    )


class RunConfig(StrictModel):
    """Everything ``benchbackcompat run`` needs, fully resolved."""

    preset: str = "quick"
    scenarios: list[NamedScenario] = Field(min_length=1)
    methods: list[str] = Field(min_length=1)
    method_params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    grids: dict[str, dict[str, list[Any]] | Literal["default"]] = Field(
        default_factory=dict,
        description='method -> hyperparameter -> values (the Cartesian product is searched), or "default": the method\'s own grid',
    )
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    seeds: list[Annotated[int, Field(ge=0, le=SEED_MAX)]] = Field(default_factory=lambda: [0], min_length=1)
    out: Path = Path("results")
    device: str = "auto"
    share_models: bool = True  # train models that do not depend on the method once per configuration
    channels_last: Literal["auto", "on", "off"] = "auto"  # NHWC training; auto: on CUDA and CPU
    compile: bool = False  # torch.compile the backbone for training
    cache_dir: Path = Field(default_factory=lambda: Path.home() / ".cache" / "benchbackcompat")
    lock_timeout: float | None = Field(default=None, gt=0, le=TIMEOUT_MAX)  # seconds to wait for another process's cell/model lock
    cell_timeout: float | None = Field(default=None, gt=0, le=TIMEOUT_MAX)  # seconds a cell may take (in its own process), then it fails


def format_validation_error(error: ValidationError, where: str, model: type[BaseModel] | None = None) -> str:
    """One line naming each bad field (dotted path) and what is allowed (for an unknown key, the known ones)."""
    parts = []
    for item in error.errors():
        loc = ".".join(str(p) for p in item["loc"])
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            known, path = _known_fields(model, item["loc"][:-1])
            close = difflib.get_close_matches(str(item["loc"][-1]), known, n=1)
            message = "unknown key" + (f", did you mean {'.'.join([*path, close[0]])}?" if close else "") + (
                f" (known: {', '.join(known)}" if known else " (check the spelling") + (
                "; `benchbackcompat describe METHOD` lists a method's hyperparameters, `run --dry-run` the resolved values)")
        elif item["type"] == "literal_error":
            message = message.replace("Input should be", "allowed:")
        parts.append(f"{loc}: {message}")
    text = f"invalid configuration in {where}: " + "; ".join(parts)
    return text.replace("\r", "\\r").replace("\n", "\\n")  # a value with line breaks still gives one line


def validate_model(model: type[BaseModel], data: dict[str, Any], where: str) -> Any:
    """Validate ``data`` against ``model`` and turn a ValidationError into a one-line BenchError."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise BenchError(format_validation_error(error, where, model)) from None


def _known_fields(model: Any, loc: tuple[Any, ...]) -> tuple[list[str], list[str]]:
    """The field names of the (nested) model at ``loc`` and the dotted path to it as a user writes it (a scenario
    kind's tag in the location picks its class and is not part of the path); [] where the path is not a plain
    nested model."""
    path: list[str] = []
    for part in loc:
        if model == SCENARIOS and str(part) in SCENARIO_CLASSES:  # the discriminated union's tag
            model = SCENARIO_CLASSES[str(part)]
            continue
        field = model.model_fields.get(str(part)) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if field is None:
            return [], []
        model = field.annotation
        if model != SCENARIOS:
            path.append(str(part))
    return (list(model.model_fields), path) if isinstance(model, type) and issubclass(model, BaseModel) else ([], [])


def config_hash(payload: Any, length: int = 16) -> str:
    """Stable hash of a JSON-serialisable payload (sorted keys), used as a cache and cell key."""
    text = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]
