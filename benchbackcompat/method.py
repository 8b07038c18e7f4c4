"""The method interface: what a plugin implements to take part in a benchmark.

A plugin registers :class:`Method` subclasses through the ``bbc_register_methods`` hook. The
runner instantiates the chosen one with its validated hyperparameters and calls it at the
points where the method families differ: the model of a step, its initialisation, work before
and after a step, the loss of a batch, and retrieval (features, similarity, and the features
compared for each matrix entry).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict
from torch import Tensor, nn

from benchbackcompat import geometry
from benchbackcompat.errors import BenchError
from benchbackcompat.metrics.retrieval import Templates, cosine_similarity, normalised_templates
from benchbackcompat.models.network import Network, build_network
from benchbackcompat.runtime.seeds import derive_seed

if TYPE_CHECKING:
    from benchbackcompat.config import TrainConfig, Trait
    from benchbackcompat.scenarios.kinds import ScenarioBase
    from benchbackcompat.data.arrays import ImageArrays
    from benchbackcompat.scenarios.steps import Step

Similarity = Callable[[Tensor, Tensor], Tensor]
Embedder = Callable[[nn.Module, "ImageArrays"], Tensor]


class MethodParams(BaseModel):
    """Base of every method's hyperparameters: unknown keys are rejected.

    ``grid`` is the method's default search space (its paper's ranges), used by ``--grid methods.NAME``
    and by presets that say ``NAME = "default"`` under ``[grids]``: hyperparameter -> candidate values."""

    model_config = ConfigDict(extra="forbid")
    grid: ClassVar[dict[str, list[Any]]] = {}


@dataclass
class Batch:
    """One augmented training batch on the training device. ``from_memory`` marks the samples drawn from the
    replay memory (all False without one): only the engine knows a batch's composition (new data then memory, then
    every world-size-th sample on each rank), so the mask, not a count, is how any method that treats replayed samples apart learns it."""

    images: Tensor  # float, normalised, B x C x H x W
    labels: Tensor  # int64, class ids in the scenario's order
    from_memory: Tensor  # bool, True for samples drawn from the replay memory


@dataclass
class StepContext:
    """What earlier steps left for the model of this step."""

    scenario: ScenarioBase
    step: Step
    steps: list[Step]
    train: TrainConfig
    device: torch.device
    old_model: Network | None  # frozen model of the previous step (None at the first step)
    train_data: ImageArrays  # images of this step (new data, without the memory)
    memory: ImageArrays | None
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    image_size: int
    seed: int = 0  # the cell's seed, for methods that draw their own initialisations
    embedder: Embedder | None = None  # set by the engine: batched feature extraction on the training device
    _align_to: Network | None = field(default=None, repr=False)  # see align_to

    @property
    def align_to(self) -> Network | None:
        """The frozen model this step aligns to: the previous step's model, unless the engine set another (the
        model pretrained elsewhere that an IAM-CL2R task starts from, as the official code)."""
        return self._align_to if self._align_to is not None else self.old_model

    @align_to.setter
    def align_to(self, model: Network | None) -> None:
        self._align_to = model

    def embed(self, model: nn.Module, arrays: ImageArrays) -> Tensor:
        """Embeddings (``model.embed``, unnormalised, float32) of every image of ``arrays``, without augmentation."""
        if self.embedder is None:
            raise RuntimeError("StepContext.embed: this context has no embedder (the engine sets one for every step)")
        return self.embedder(model, arrays)

    def clock(self) -> tuple[int, int]:
        """(batches per epoch, batches of the whole step), as the training loop counts them."""
        n_memory = len(self.memory) if (self.step.replay and self.memory is not None) else 0
        per_epoch = batches_per_epoch(len(self.train_data), n_memory, self.train.batch_size)
        return per_epoch, per_epoch * self.train.epochs

    def derived_seed(self, *keys: object) -> int:
        """A seed derived from the cell's seed and ``keys`` (stable across processes)."""
        return derive_seed(self.seed, *keys)


def batches_per_epoch(n_new: int, n_memory: int, batch_size: int) -> int:
    """Batches of one epoch: full batches of the new data, or with a replay memory (n_new + n_memory) // size."""
    size = min(batch_size, n_new + n_memory)
    return max(1, (n_new + n_memory) // size) if n_memory else n_new // size


class Method:
    """Base method: a model per step trained with cross-entropy, compared with cosine similarity.

    Subclasses set ``name`` (and ``description``), a ``Params`` model, and override only what
    differs. ``standard_steps`` says which steps are plain cross-entropy training that every
    such method shares (trained once per scenario, seed and configuration): ``"first"`` for
    methods that regularise towards the scenario's standard old model, ``"all"`` for the
    independent baseline, ``"none"`` for methods that need an old model of their own.

    ``self.state`` (tensors by name) is what a method carries from step to step besides its models
    (adapters, statistics): the engine saves it with every step's checkpoint and restores it when a
    cell resumes, as ``nn.Module.state_dict`` does for a module's tensors.
    """

    name: ClassVar[str] = "standard"
    description: ClassVar[str] = "cross-entropy training, no compatibility term"
    Params: ClassVar[type[MethodParams]] = MethodParams
    standard_steps: ClassVar[Literal["first", "all", "none"]] = "first"
    head: ClassVar[str] = "linear"
    requires: ClassVar[tuple[Trait, ...]] = ()  # scenario traits the method needs (ScenarioBase.traits), in order

    def __init__(self, params: MethodParams | None = None) -> None:
        self.params = params if params is not None else self.Params()
        self.state: dict[str, Tensor] = {}  # carried across steps; saved with each step's checkpoint (class docstring)

    # --- scenarios -------------------------------------------------------------------------
    def unsupported_reason(self, scenario: ScenarioBase) -> str | None:
        """None if the method can run the scenario, else why not (the cell is reported as not applicable).
        Default: the first trait of ``requires`` that the scenario lacks, in the scenario's words."""
        missing = [trait for trait in self.requires if trait not in scenario.traits]
        return scenario.lacks(missing[0], self.name) if missing else None

    # --- models ----------------------------------------------------------------------------
    def build_model(self, ctx: StepContext, backbone: str, num_classes: int) -> Network:
        """A fresh model for a step (also used for pretrained models and references)."""
        return build_network(
            backbone,
            num_classes=num_classes,
            head=self.head,
            embedding_dim=ctx.scenario.model.embedding_dim,
            **backbone_options(ctx, backbone),
            in_chans=ctx.train_data.images.shape[1],
        )

    def initialise(self, model: Network, source: Network | None, ctx: StepContext) -> None:
        """The one place where a step's freshly built model gets its starting weights. ``source`` is what the
        scenario's initialisation names: the previous model (every matching tensor is copied; a grown
        classifier keeps the old rows), a pretrained model (all but its classifier, whose classes are the
        pretraining pool's), or None (scratch: the seeded initialisation is kept)."""
        if source is not None:
            skip = ("head.",) if ctx.step.init == "pretrained" else ()
            copy_matching_weights(model, source, skip=skip)

    # --- training --------------------------------------------------------------------------
    def before_step(self, model: Network, ctx: StepContext) -> Sequence[nn.Module]:
        """Work before training a step (class statistics of the old model, synthesised rows, ...). Returns the
        step's own trainable modules (a discriminator, learnable radii, ...): the engine trains them with the
        model for this step only, and they are not part of the stored model."""
        return ()

    def classify(self, model: Network, batch: Batch, ctx: StepContext) -> tuple[Any, Tensor]:
        """The model's output on a batch and its classification loss (default: cross-entropy on the logits)."""
        out = model(batch.images)
        return out, F.cross_entropy(out.logits, batch.labels)

    def loss(self, model: Network, batch: Batch, ctx: StepContext) -> dict[str, Tensor]:
        """Loss terms of a batch; ``"loss"`` is the total that is minimised, the others are logged.
        Default: the classification loss alone."""
        _, ce = self.classify(model, batch, ctx)
        return {"loss": ce, "ce": ce}

    def after_step(self, model: Network, ctx: StepContext) -> None:
        """Work after training a step (adapters, memory statistics, ...)."""

    # --- retrieval -------------------------------------------------------------------------
    def features(self, model: Network, images: Tensor) -> Tensor:
        """Retrieval features of normalised images."""
        return model.embed(images)

    def feature_size(self, model: Network) -> int:
        """Width of ``features(model, images)``; override when the features are not the embedding."""
        return model.feature_dim

    def similarity(self) -> Similarity:
        """Score matrix of query x gallery features, higher is more similar."""
        return cosine_similarity

    def templates(self) -> Templates:
        """Class templates of the template protocol, in the geometry of ``similarity()``: by default
        L2-normalised features averaged per class and re-normalised (IAM-CL2R code)."""
        return normalised_templates

    def pair_features(self, query: Tensor, gallery: Tensor, query_step: int, gallery_step: int) -> tuple[Tensor, Tensor]:
        """The features compared for matrix entry C[query_step][gallery_step], from each model's
        stored features (extracted once): PSP/LSP project the query to the gallery model's classes,
        FAN maps the stored gallery into the query model's space. Default: unchanged."""
        return query, gallery

    def index_features(self, query: Tensor, gallery: Tensor) -> tuple[Tensor, Tensor]:
        """``pair_features``' output mapped to features whose inner product ranks the gallery as ``similarity()``
        does, for a maximum-inner-product index (FAISS). Default, by the similarity: cosine, L2-normalised; the
        Lorentz geodesic distance, the query's time coordinate negated (the distance falls as the Lorentz inner
        product grows); a similarity equal to the inner product plus a constant on these features (PSP/LSP's
        unit features), unchanged. Any other: override, or the method cannot be evaluated through an index."""
        similarity = self.similarity()
        if similarity is cosine_similarity:
            return F.normalize(query, dim=1), F.normalize(gallery, dim=1)
        if geometry.is_geodesic_similarity(similarity):
            return torch.cat([-query[:, :1], query[:, 1:]], 1), gallery
        if _inner_product_plus_constant(similarity, query, gallery):
            return query, gallery
        raise BenchError(f"{self.name}: its similarity has no inner-product form for an index "
                         "(override Method.index_features)")

    def reference(self) -> Method:
        """The method that trains the models pretrained elsewhere (IAM-CL2R) and, for a method that trains
        its own old model (``standard_steps = "none"``), the independent new model of P_com/P_up: the
        method's step-0 objective without a compatibility term. Default: plain cross-entropy."""
        return StandardMethod()

    def model_identity(self) -> dict[str, Any]:
        """Hyperparameters that change this method's plain cross-entropy models (curvature, K, a temperature
        inside the model, ...): part of the key of the shared models, so that other settings never reuse
        them. Default: none."""
        return {}

    def model_key(self) -> dict[str, Any]:
        """What the models this method trains (as a standard recipe or a reference) are keyed by, besides
        their data, training and code: declared data only (name, head, hyperparameters, ``model_identity``),
        never function names, so renaming code does not change which stored model is meant."""
        return {"name": self.name, "head": self.head, "params": self.params.model_dump(mode="json"),
                **self.model_identity()}


class CompatibilityMethod(Method):
    """A method that adds compatibility terms to the classification loss once there is something to be
    compatible with: subclasses implement :meth:`compatibility_terms`, the one thing each paper adds."""

    def aligns(self, batch: Batch, ctx: StepContext) -> bool:
        """Whether this batch gets the compatibility terms (default: when the step has an old model)."""
        return ctx.old_model is not None

    def compatibility_terms(self, model: Network, out: Any, batch: Batch, ctx: StepContext, ce: Tensor) -> dict[str, Tensor]:
        """``"loss"``, the total minimised (the classification loss ``ce`` combined with the paper's terms, in
        the paper's form), and the terms to log; ``out`` is what :meth:`classify` returned."""
        raise NotImplementedError(f"{type(self).__name__} must implement compatibility_terms")

    def loss(self, model: Network, batch: Batch, ctx: StepContext) -> dict[str, Tensor]:
        """The classification loss alone before there is an old model (or when :meth:`aligns` says no),
        else with :meth:`compatibility_terms`."""
        out, ce = self.classify(model, batch, ctx)
        if not self.aligns(batch, ctx):
            return {"loss": ce, "ce": ce}
        terms = self.compatibility_terms(model, out, batch, ctx, ce)
        return {"loss": terms.pop("loss"), "ce": ce, **terms}


class StandardMethod(Method):
    """Plain cross-entropy training: the shared old models and the references of P_com/P_up."""

    name = "standard"


class StandardRecipe(Method):
    """The recipe of ``owner``'s plain models: cross-entropy training of ``owner``'s model (its builder and head),
    retrieved as ``owner`` retrieves (features, similarity, templates, pair features). The engine trains the
    shared standard models with it (methods with ``standard_steps`` "first" or "all"); a method's own
    ``reference()`` may subclass it. Its models are keyed by declared data (``model_key``: "standard", the head,
    ``owner.model_identity()``) and by the source of ``owner``'s code (``code_owner``)."""

    name = "standard"

    def __init__(self, owner: Method) -> None:
        super().__init__()
        self.owner = owner
        self.head = owner.head  # type: ignore[misc]

    @property
    def code_owner(self) -> Method:
        """The method whose code builds these models."""
        return self.owner

    def build_model(self, ctx: StepContext, backbone: str, num_classes: int) -> Network:
        return self.owner.build_model(ctx, backbone, num_classes)

    def features(self, model: Network, images: Tensor) -> Tensor:
        return self.owner.features(model, images)

    def feature_size(self, model: Network) -> int:
        return self.owner.feature_size(model)

    def similarity(self) -> Similarity:
        return self.owner.similarity()

    def templates(self) -> Templates:
        return self.owner.templates()

    def pair_features(self, query: Tensor, gallery: Tensor, query_step: int, gallery_step: int) -> tuple[Tensor, Tensor]:
        return self.owner.pair_features(query, gallery, query_step, gallery_step)

    def index_features(self, query: Tensor, gallery: Tensor) -> tuple[Tensor, Tensor]:
        return self.owner.index_features(query, gallery)

    def model_identity(self) -> dict[str, Any]:
        return self.owner.model_identity()

def _inner_product_plus_constant(similarity: Callable[[Tensor, Tensor], Tensor], query: Tensor, gallery: Tensor,
                                 sample: int = 64) -> bool:
    """Whether ``similarity`` equals the inner product plus one constant on a sample of these features (then an
    inner-product index ranks as it does)."""
    q, g = query[:sample].double(), gallery[:sample].double()
    offset = similarity(q, g).double() - q @ g.T
    return bool((offset - offset.mean()).abs().max() < 1e-6)



def match_size(features: Tensor, size: int) -> Tensor:
    """Truncate or zero-pad features to ``size`` dimensions (openBCT), to compare models of different widths."""
    if features.shape[1] >= size:
        return features[:, :size]
    return F.pad(features, (0, size - features.shape[1]))


def backbone_options(ctx: StepContext, backbone: str) -> dict[str, Any]:
    """How to build ``backbone`` in this scenario: the data's image size, its pretrained weights
    (``model.pretrained``) and its input size (``model.input_size``, images resized on the device)."""
    model = ctx.scenario.model
    return {"image_size": ctx.image_size, "pretrained": getattr(model, "pretrained", {}).get(backbone, False),
            "input_size": getattr(model, "input_size", {}).get(backbone)}


@torch.no_grad()
def old_unit_features(ctx: StepContext, images: Tensor) -> Tensor:
    """L2-normalised float32 features of the frozen old model ``ctx.old_model`` (no gradient)."""
    return F.normalize(ctx.old_model.embed(images).float(), dim=1)


def frozen_copy(model: nn.Module) -> nn.Module:
    """An evaluation-mode copy of ``model`` that takes no gradient."""
    import copy

    clone = copy.deepcopy(model).eval()
    for parameter in clone.parameters():
        parameter.requires_grad_(False)
    return clone


def copy_matching_weights(target: nn.Module, source: nn.Module, skip: tuple[str, ...] = ()) -> None:
    """Copy every tensor of ``source`` into ``target`` where the names match (except names starting
    with ``skip``); leading rows of a grown tensor (a classifier with more classes) are copied, the
    rest keep their initialisation."""
    source_state = source.state_dict()
    target_state = target.state_dict()
    for name, value in target_state.items():
        old = source_state.get(name)
        if old is None or name.startswith(skip):
            continue
        if old.shape == value.shape:
            value.copy_(old)
        elif old.dim() == value.dim() and old.shape[1:] == value.shape[1:] and old.shape[0] < value.shape[0]:
            value[: old.shape[0]].copy_(old)
    target.load_state_dict(target_state)
