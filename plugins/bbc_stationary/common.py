"""Shared pieces of the fixed-classifier ("stationary") methods: the number of pre-allocated
classes, the network with a fixed d-Simplex or simplex-ETF head, the IAM-CL2R label layout,
the frozen reference model and the pretraining recipe. No hook implementations here."""
from __future__ import annotations

from typing import Any, ClassVar, Literal

import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

from benchbackcompat.errors import BenchError
from benchbackcompat.method import Batch, Method, MethodParams, StandardRecipe, StepContext, backbone_options
from benchbackcompat.models.network import Network, NetworkOutput, build_network
from benchbackcompat.scenarios import IAMCL2R, ScenarioBase


class FixedParams(MethodParams):
    classes: int | None = Field(
        None, ge=2,
        description="K pre-allocated classes of the fixed classifier; None: the training classes, or for iam-cl2r the "
                    "next power of two >= pretraining + training classes (1024 for 600 + 100, as the paper)",
    )
    simplex: Literal["unit", "frobenius"] = Field(
        "unit", description="d-Simplex rows: unit (the released iamcl2r/CoReS code, DESIGN default) or frobenius "
                            "(the older code: vertex matrix divided by its Frobenius norm, then centred)",
    )


def needed_classes(scenario: ScenarioBase, training_classes: int) -> int:
    """Outputs the fixed classifier must hold: IAM-CL2R puts the pretraining classes left to right and
    the fine-tuning classes right to left, so both must fit (K >= pretraining + fine-tuning classes: "A Stationary
    (and Therefore Compatible) Representation is All You Need", the IAM-CL2R label layout)."""
    return training_classes + (max(scenario.pretrain_classes) if isinstance(scenario, IAMCL2R) else 0)


def preallocated(requested: int | None, ctx: StepContext) -> int:
    """K for a scenario: ``requested``, or the default described in :class:`FixedParams`."""
    training = max(step.seen_classes for step in ctx.steps)
    needed = needed_classes(ctx.scenario, training)
    if requested is None:
        return 1 << (needed - 1).bit_length() if isinstance(ctx.scenario, IAMCL2R) else needed
    if requested < needed:
        raise BenchError(f"classes={requested} pre-allocated outputs cannot hold the {needed} classes of this scenario; "
                         f"set classes >= {needed} (or leave it unset)")
    return requested


def fine_tuning_targets(labels: Tensor, num_outputs: int, scenario: ScenarioBase) -> Tensor:
    """IAM-CL2R fine-tuning labels go right to left (y -> K-1-y) so that they never meet the pretraining
    classes, which go left to right ("Stationary Representations", CVPR 2024, Sec. 3.1); other scenarios keep y."""
    return num_outputs - 1 - labels if isinstance(scenario, IAMCL2R) else labels


class FixedHeadMethod(Method):
    """A method whose classifier is fixed (d-Simplex or simplex ETF) over K pre-allocated classes,
    trained with cross-entropy over all K logits (stationary cross-entropy, HOC Eq. 3 / CoReS Eq. 9)."""

    Params: ClassVar[type[MethodParams]] = FixedParams
    head: ClassVar[str] = "dsimplex"
    standard_steps = "none"
    requires = ("trains",)  # its own models around a fixed classifier: not a model zoo's

    def num_outputs(self, ctx: StepContext) -> int:
        return preallocated(self.params.classes, ctx)

    def feature_dim(self, ctx: StepContext, classes: int) -> int | None:
        """d-Simplex: K-1 (fixed by K). ETF: the scenario's embedding size, at least K-1."""
        if self.head == "dsimplex":
            return None
        return max(ctx.scenario.model.embedding_dim or 0, classes - 1)

    def build_model(self, ctx: StepContext, backbone: str, num_classes: int) -> Network:
        """Backbone -> bias-free projection (the feature) -> fixed K-way head; ``num_classes`` is ignored
        because every class is pre-allocated."""
        classes = self.num_outputs(ctx)
        variant = {"variant": self.params.simplex} if self.head == "dsimplex" else None
        return build_network(backbone, num_classes=classes, head=self.head, embedding_dim=self.feature_dim(ctx, classes),
                             in_chans=ctx.train_data.images.shape[1], head_kwargs=variant, **backbone_options(ctx, backbone))

    def targets(self, model: Network, batch: Batch, ctx: StepContext) -> Tensor:
        return fine_tuning_targets(batch.labels, model.head.num_classes, ctx.scenario)

    def stationary_ce(self, logits: Tensor, model: Network, batch: Batch, ctx: StepContext) -> Tensor:
        return F.cross_entropy(logits, self.targets(model, batch, ctx))

    def classify(self, model: Network, batch: Batch, ctx: StepContext) -> tuple[NetworkOutput, Tensor]:
        out = model(batch.images)
        return out, self.stationary_ce(out.logits, model, batch, ctx)

    def reference(self) -> Method:
        """Cross-entropy with this method's fixed head and labels left to right: the models pretrained
        elsewhere (IAM-CL2R) and the references of P_com/P_up."""
        return FixedHeadRecipe(self)


class FixedHeadRecipe(StandardRecipe):
    """Plain cross-entropy over all K logits with ``owner``'s network, labels as they are."""

    name = "standard-fixed"
    standard_steps = "none"

    def model_identity(self) -> dict[str, Any]:
        return {"classes": self.owner.params.classes, "simplex": self.owner.params.simplex}
