"""``fan``: feature adaptation (Iscen et al., ECCV'20, "Memory-efficient incremental learning through
feature adaptation"), the mapping baseline of CL2R/IAM-CL2R.

Each new model is trained with cross-entropy alone (with the replay memory where the scenario has
one). After step t a small network A_t (normalise -> Linear(d_{t-1}, h) -> ReLU -> Linear(h, d_t)) is
trained on the step's data to map the old model's features into the new model's space:
L = ||A_t(f_old) - f_new||^2 + CE(W_t A_t(f_old), y) (feature regression plus the new classifier on
the adapted features, Iscen et al. Sec. 3). At evaluation the stored gallery features of model k are
not re-extracted but mapped, A_t o ... o A_{k+1}, into the space of query model t. The adapters live
in ``self.state`` (``adapter{t}.{w1,b1,w2,b2}``) and are saved with every step checkpoint.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor, nn

import benchbackcompat
from bbc_compat.common import available_data
from benchbackcompat.errors import BenchError
from benchbackcompat.method import Method, MethodParams, StepContext, frozen_copy
from benchbackcompat.models.network import Network

WEIGHTS = ("w1", "b1", "w2", "b2")


class FANParams(MethodParams):
    hidden: int = Field(256, ge=1, description="hidden units of the adaptation network")
    epochs: int = Field(30, ge=1, description="epochs of adapter training on the stored features")
    lr: float = Field(1e-3, gt=0, description="Adam learning rate of the adapter")
    batch_size: int = Field(128, ge=2)
    classification_weight: float = Field(1.0, ge=0, description="weight of the new classifier's CE on adapted features")


def adapt(features: Tensor, weights: dict[str, Tensor]) -> Tensor:
    """A(f) = W2 relu(W1 f^ + b1) + b2, f^ the L2-normalised input."""
    hidden = F.relu(F.linear(F.normalize(features.float(), dim=1), weights["w1"], weights["b1"]))
    return F.linear(hidden, weights["w2"], weights["b2"])


def init_adapter(d_in: int, d_out: int, hidden: int, device: torch.device) -> dict[str, Tensor]:
    """Weights of a fresh adapter, initialised as ``nn.Linear`` (from the global, runner-seeded RNG)."""
    first, second = nn.Linear(d_in, hidden), nn.Linear(hidden, d_out)
    return {k: v.detach().to(device).requires_grad_() for k, v in
            zip(WEIGHTS, (first.weight, first.bias, second.weight, second.bias), strict=True)}


def train_adapter(old: Tensor, new: Tensor, labels: Tensor, head: nn.Module | None, params: FANParams) -> dict[str, Tensor]:
    """Fit A: old features -> new features by MSE (+ the frozen new head's CE on A(old))."""
    weights = init_adapter(old.shape[1], new.shape[1], params.hidden, old.device)
    optimizer = torch.optim.Adam(list(weights.values()), lr=params.lr)
    for _ in range(params.epochs):
        order = torch.randperm(len(old)).to(old.device)
        for start in range(0, len(old), params.batch_size):
            idx = order[start : start + params.batch_size]
            mapped = adapt(old[idx], weights)
            loss = (mapped - new[idx]).pow(2).sum(dim=1).mean()
            if head is not None and params.classification_weight > 0:
                loss = loss + params.classification_weight * F.cross_entropy(head(mapped), labels[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return {k: v.detach() for k, v in weights.items()}


class FAN(Method):
    name = "fan"
    requires = ("trains",)
    description = "cross-entropy models; old gallery features mapped by chained feature-adaptation networks (Iscen et al. 2020)"
    Params = FANParams

    def after_step(self, model: Network, ctx: StepContext) -> None:
        if ctx.old_model is None:
            return
        data = available_data(ctx)
        old, new = ctx.embed(ctx.old_model, data), ctx.embed(model, data)
        head = frozen_copy(model.head).float() if model.head is not None else None
        with torch.enable_grad():
            weights = train_adapter(old, new, data.labels, head, self.params)
        self.state.update({f"adapter{ctx.step.index}.{k}": v for k, v in weights.items()})

    def adapter(self, step: int) -> dict[str, Tensor]:
        try:
            return {k: self.state[f"adapter{step}.{k}"] for k in WEIGHTS}
        except KeyError:
            raise BenchError(f"fan: no adapter into the space of model {step} (was that step trained by fan?)") from None

    def pair_features(self, query: Tensor, gallery: Tensor, query_step: int, gallery_step: int) -> tuple[Tensor, Tensor]:
        """Map model k's stored gallery into model t's space: A_t o ... o A_{k+1}."""
        for step in range(gallery_step + 1, query_step + 1):
            gallery = adapt(gallery, self.adapter(step))
        return query, gallery


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [FAN]
