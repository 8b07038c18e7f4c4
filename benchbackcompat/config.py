"""Configuration models (pydantic v2, ``extra="forbid"``): run, scenario, training, data and model.

Precedence: these defaults < the preset file (its ``[defaults]``, then the scenario's own table) <
command-line flags. Every model rejects unknown keys, so a typo fails before any training.
"""
from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, get_args

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
    amp: Literal["auto", "bf16", "off"] = Field("auto", description="auto = bf16 autocast where a few timed training steps of the backbone run faster in bf16 than in fp32 on this machine (measured once, cached in the user cache), fp32 otherwise")
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
    orders: list[Literal["random", "class-distance", "class-balanced", "uncertainty", "hbct-uncertainty", "learned",
                         "oracle", "oracle-bound"]] = Field(
        default_factory=lambda: ["random", "class-distance"], min_length=1,
        description="refresh orders: random; class-distance, the old embeddings least similar to their class template "
                    "first; class-balanced, one item of every class in turn, the most typical first; uncertainty, the "
                    "smallest old class-template margin first (Hot-Refresh); hbct-uncertainty, the highest Unc(h) of "
                    "the old embedding first (HBCT; uncertainty off the hyperboloid); learned, the new model's change "
                    "of the item predicted from the old feature (after FastFill); oracle, greedy by the queries each "
                    "refresh fixes (a greedy reference, not a bound); oracle-bound, not an order but the ceiling of "
                    "every order's curve: the queries whose top-1 some refresh of that many items makes right, each "
                    "query alone (top-1 hits only)")
    permutations: int = Field(1, ge=1, le=100, description="random permutations of the random order per seed, each its "
                              "own curve: the first is the one drawn as before, the others widen the area's interval "
                              "by the order's randomness")

    @model_validator(mode="after")
    def _bound_beside_an_order(self) -> BackfillConfig:
        if self.orders == ["oracle-bound"]:
            raise ValueError("oracle-bound is the ceiling drawn beside refresh orders, not an order: add one, "
                             "e.g. orders=[\"random\", \"oracle-bound\"]")
        return self

    @model_serializer(mode="wrap")
    def _omit_one_permutation(self, handler: Any) -> dict[str, Any]:
        """With one permutation (the default) the dump, and so every key hashed from it, is what it was before the
        field existed."""
        data = handler(self)
        if data.get("permutations") == 1:
            data.pop("permutations")
        return data


class IndexConfig(StrictModel):
    """Retrieval through an index trained on the gallery features of each entry, FAISS (``benchbackcompat[faiss]``)
    or Milvus (``benchbackcompat[milvus]``), reported beside the exact scores. Off unless set."""

    kinds: list[Literal["flat", "ivf-pq"]] = Field(default_factory=lambda: ["flat", "ivf-pq"], min_length=1)
    nlist: int = Field(16, ge=1, le=1 << 20, description="IVF cells (at most gallery size / 39, faiss's training floor)")
    nprobe: int = Field(4, ge=1, le=1 << 20, description="IVF cells visited per query")
    pq_m: int = Field(8, ge=1, le=DIM_MAX, description="PQ sub-quantisers (features zero-padded to a multiple)")
    pq_bits: int = Field(8, ge=1, le=16, description="bits per PQ code (at most log2 of the gallery size)")
    backend: Literal["faiss", "milvus"] = Field("faiss", description="faiss in process, or the Milvus vector database")
    milvus_uri: str = Field("", max_length=1000, description="backend milvus: a server or cluster (http://host:19530); "
                            "empty: Milvus Lite in a temporary file")

    @model_serializer(mode="wrap")
    def _omit_default_backend(self, handler: Any) -> dict[str, Any]:
        """With FAISS (the default) the dump, and so every key hashed from it, is what it was before the backend
        fields existed."""
        data = handler(self)
        if data.get("backend") == "faiss" and not data.get("milvus_uri"):
            data.pop("backend", None)
            data.pop("milvus_uri", None)
        return data

    @model_validator(mode="after")
    def _lite_has_no_ivf_pq(self) -> IndexConfig:
        if self.backend == "milvus" and not self.milvus_uri and "ivf-pq" in self.kinds:
            raise ValueError("Milvus Lite (backend milvus without milvus_uri) has no IVF_PQ index: "
                             "set kinds=[\"flat\"] or milvus_uri to a Milvus server")
        return self


Protocol = Literal["loo", "nn", "template", "verification"]
SelectionRule = Literal["hbct", "ac-then-aa"]
RetrievalMetric = Literal["cmc@1", "cmc@5", "map", "map@r", "top1", "verification"]
Trait = Literal["trains", "incremental", "replay", "cumulative", "same-architecture"]


class SelectionConfig(StrictModel):
    """How grid points are compared: the validation split and the tolerance of HBCT's rule."""

    validation: ValidationSplit = Field(default_factory=ValidationSplit)
    tolerance: float = Field(
        0.0, ge=0, le=1, description="single updates: a setting qualifies if its P_up is at most this far below the reference's (0)"
    )


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
        elif item["type"] == "value_error":  # a validator's own words, without pydantic's prefix
            message = message.removeprefix("Value error, ")
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
    """The field names of the (nested) model at ``loc`` and the dotted path to it as a user writes it (the tag of a
    union discriminated by ``kind``, as the scenario kinds are, picks its class and is not part of the path); [] where
    the path is not a plain nested model."""
    path: list[str] = []
    for part in loc:
        if str(part) in (tagged := _kinds_of(model)):
            model = tagged[str(part)]
            continue
        field = model.model_fields.get(str(part)) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if field is None:
            return [], []
        model = field.annotation
        if not _kinds_of(model):
            path.append(str(part))
    return (list(model.model_fields), path) if isinstance(model, type) and issubclass(model, BaseModel) else ([], [])


def _kinds_of(annotation: Any) -> dict[str, type[BaseModel]]:
    """The classes of a union discriminated by ``kind``, by tag ({} for any other annotation)."""
    return {str(member.model_fields["kind"].default): member for member in get_args(annotation)
            if isinstance(member, type) and issubclass(member, BaseModel) and "kind" in member.model_fields}


def config_hash(payload: Any, length: int = 16) -> str:
    """Stable hash of a JSON-serialisable payload (sorted keys), used as a cache and cell key."""
    text = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]

