"""Shared pieces of the compatibility methods (no hookimpl): the old model's
features and class statistics, gradient reversal, starting from the old model."""
from __future__ import annotations

import torch
from torch import Tensor, nn

from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.method import StepContext, copy_matching_weights


def available_data(ctx: StepContext) -> ImageArrays:
    """The images a step may use: its training data and the replay memory."""
    if ctx.memory is None or len(ctx.memory) == 0:
        return ctx.train_data
    return ImageArrays(torch.cat([ctx.train_data.images, ctx.memory.images]),
                       torch.cat([ctx.train_data.labels, ctx.memory.labels]))


def class_means(features: Tensor, labels: Tensor, num_classes: int) -> tuple[Tensor, Tensor]:
    """Per-class mean of ``features`` (zero rows for absent classes) and per-class counts."""
    counts = torch.bincount(labels, minlength=num_classes)[:num_classes]
    sums = torch.zeros(num_classes, features.shape[1], device=features.device, dtype=features.dtype)
    sums.index_add_(0, labels, features)
    return sums / counts.clamp(min=1).unsqueeze(1).to(features.dtype), counts


class _GradientReversal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, alpha: float) -> Tensor:
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        return -ctx.alpha * grad, None


def grad_reverse(x: Tensor, alpha: float = 1.0) -> Tensor:
    """Identity forward; the gradient is multiplied by ``-alpha`` backward (Ganin & Lempitsky's GRL)."""
    return _GradientReversal.apply(x, alpha)


def start_from_old(model: nn.Module, ctx: StepContext) -> None:
    """Fine-tuning methods start every update from the old model, whatever the scenario's initialisation
    (``Method.initialise`` already copies it for ``previous``; a pretrained replacement is kept)."""
    if ctx.old_model is not None and ctx.step.init in ("scratch", "same-as-first"):
        copy_matching_weights(model, ctx.old_model)
