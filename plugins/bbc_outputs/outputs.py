"""What PSP and LSP share: models trained alone with tempered cross-entropy, logits stored once per
model, and the query projected to each gallery model's classes per matrix entry (Algorithm 1).

Temperature: the paper trains CIFAR/TinyImageNet models with "a temperature factor of 12" in the
cross-entropy without saying how. By default (``temperature_scope = "model"``) it is part of the model:
logits = (W f + b) / temperature (``temperature_mode = "multiply"``: times it), used by the cross-entropy
and by the PSP softmax alike; LSP features are invariant to it. ``temperature_scope = "loss"`` is the
other reading: the temperature scales the logits in training mode only (so in the cross-entropy), and the
logits stored at extraction (eval mode, so the PSP softmax) are the head's own. Because the temperature lives in the model or its training,
the models are the scenario's shared standard models of this head: trained once, used by both PSP and
LSP (their identity carries the temperature and its scope, so other settings train their own).
"""
from __future__ import annotations

from typing import Any, Literal

import torch
from pydantic import Field
from torch import Tensor, nn

from bbc_outputs.projection import simplex_features, simplex_similarity
from benchbackcompat.method import Method, MethodParams, Similarity, StepContext, backbone_options
from benchbackcompat.models.network import Network, build_network


class OutputParams(MethodParams):
    temperature: float = Field(12.0, gt=0, description="logit temperature of training and of the PSP softmax (paper: 12)")
    temperature_mode: Literal["divide", "multiply"] = Field("divide", description="logits are divided (or multiplied) by it")
    temperature_scope: Literal["model", "loss"] = Field(
        "model", description="model: a tempered head, used at training and extraction; loss: the training loss only")
    top_k: int | None = Field(None, ge=1, description="keep the k largest projected entries (App. K: 128); None keeps all")


class Tempered(nn.Module):
    """A classifier head whose logits are scaled by a fixed factor; with ``training_only``, in training mode only
    (the cross-entropy sees the tempered logits, extraction in eval mode the head's own)."""

    def __init__(self, head: nn.Module, factor: float, *, training_only: bool = False) -> None:
        super().__init__()
        self.inner = head
        self.factor = factor
        self.training_only = training_only

    def forward(self, features: Tensor) -> Tensor:
        logits = self.inner(features)
        return logits if self.training_only and not self.training else logits * self.factor


class OutputFeatures(Method):
    """Base of PSP and LSP: ``softmax`` and ``center`` select the variant."""

    Params = OutputParams
    requires = ("cumulative",)
    standard_steps = "all"
    softmax: bool = True

    def model_identity(self) -> dict[str, Any]:
        """The temperature sits inside the model (its tempered head): models of other temperatures are not shared."""
        identity = {"temperature_mode": self.params.temperature_mode, "temperature": self.params.temperature}
        return identity if self.params.temperature_scope == "model" else {**identity, "temperature_scope": "loss"}

    @property
    def logit_factor(self) -> float:
        """What the logits are multiplied by: 1 / temperature, or the temperature with ``temperature_mode = "multiply"``."""
        t = self.params.temperature
        return 1.0 / t if self.params.temperature_mode == "divide" else t

    @property
    def center(self) -> bool:
        return True

    def build_model(self, ctx: StepContext, backbone: str, num_classes: int) -> Network:
        model = build_network(backbone, num_classes=num_classes, head="linear", embedding_dim=ctx.scenario.model.embedding_dim,
                              in_chans=ctx.train_data.images.shape[1], **backbone_options(ctx, backbone))
        model.head = Tempered(model.head, self.logit_factor, training_only=self.params.temperature_scope == "loss")
        return model

    def features(self, model: Network, images: Tensor) -> Tensor:
        """The model's logits, stored once; projected per matrix entry in ``pair_features``."""
        return model(images).logits

    @torch.no_grad()
    def feature_size(self, model: Network) -> int:
        """The number of the model's outputs (its classes)."""
        probe = torch.zeros(1, model.feature_dim, device=next(model.parameters()).device)
        return model.head(probe).shape[1]

    def pair_features(self, query: Tensor, gallery: Tensor, query_step: int, gallery_step: int) -> tuple[Tensor, Tensor]:
        """Query logits truncated to the gallery model's C_k classes, both sides centred and normalised."""
        classes = gallery.shape[1]
        options = dict(softmax=self.softmax, center=self.center, top_k=self.params.top_k)
        return simplex_features(query, classes, **options), simplex_features(gallery, classes, **options)

    def similarity(self) -> Similarity:
        return simplex_similarity

    def reference(self) -> Method:
        """P_com/P_up references: this method's own models and features (they need no compatibility training)."""
        return type(self)(self.params)
