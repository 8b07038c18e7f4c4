"""``advbct``: boundary-aware backward-compatible training with adversarial learning (Pan et al., CVPR'23).

L = CE + L_comp + (E - e + 1)/E * L_adv, e = 0..E-1 (official Ashespt/AdvBCT code):

- old meta per class from the old model's normalised features on the step's data: centre c_k (the mean,
  not re-normalised) and r_max,k, the largest distance ||f - c_k|| left after 1.5 IQR outlier removal with
  the quartiles read from the sorted distances (classes of n >= 4; fewer than two left: skipped);
- elastic boundary: r_k = r_max,k +- |r_max,k - T| sigmoid(w_k), T = 1, + when r_max,k < T, learnable w_k ~ U(-1, 1);
- L_comp: mean over *violating* samples of relu(||f^_new - c_y|| - r_y);
- L_adv: a discriminator d -> 100 -> BN -> ReLU -> 2 (log-softmax) tells old features (label 1) from new
  ones (label 0); the new features reach it through a gradient-reversal layer with
  alpha = 2 / (1 + exp(-10 p)) - 1, p the progress through the step's iterations.

Features are L2-normalised (and the new ones truncated or zero-padded to the old size). The elastic
weights and the discriminator are trained with the model for the step and dropped afterwards. With a
replay memory (CL2R/IAM-CL2R) this is AdvBCT-ER.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor, nn

import benchbackcompat
from bbc_compat.common import available_data, class_means, grad_reverse
from benchbackcompat.method import Batch, CompatibilityMethod, Method, MethodParams, StepContext, match_size, old_unit_features
from benchbackcompat.models.network import Network


class AdvBCTParams(MethodParams):
    threshold: float = Field(1.0, gt=0, description="T, the radius the elastic boundary moves towards")
    iqr_factor: float = Field(1.5, gt=0, description="distances beyond factor * IQR of the quartiles are outliers")
    adversarial: bool = Field(True, description="add the discriminator with gradient reversal")


def boundary_meta(
    features: Tensor, labels: Tensor, num_classes: int, iqr_factor: float = 1.5
) -> tuple[Tensor, Tensor, Tensor]:
    """(centres, r_max, valid) per class, as the official ``extract_feat.gen_class_meta``: the mean of the
    normalised features (not re-normalised); the distances to it sorted, and for a class of n >= 4 samples
    those outside [q1 - f IQR, q3 + f IQR] dropped, with q1 = r[int(n/4)] and q3 = r[int(3n/4)] taken from
    the sorted list (no interpolation); r_max the largest distance left; valid when more than one is left
    (the trainer skips classes with a single radius)."""
    unit = F.normalize(features.float(), dim=1)
    centres, _ = class_means(unit, labels, num_classes)
    distances = (unit - centres[labels]).norm(dim=1)
    r_max = torch.zeros(num_classes, device=unit.device)
    valid = torch.zeros(num_classes, dtype=torch.bool, device=unit.device)
    for k in labels.unique().tolist():  # a loop over classes, not samples
        d = distances[labels == k].sort().values
        n = len(d)
        if n >= 4:
            q1, q3 = d[n // 4], d[3 * n // 4]
            spread = iqr_factor * (q3 - q1)
            d = d[(d >= q1 - spread) & (d <= q3 + spread)]
        if len(d) > 1:
            r_max[k], valid[k] = d[-1], True
    return centres, r_max, valid


def adversarial_weight(epoch: int, epochs: int) -> float:
    """(E - e + 1) / E with e the epoch counted from 0, as the official trainer: (E+1)/E at the first
    epoch down to 2/E at the last."""
    return (epochs - epoch + 1) / epochs


def elastic_radius(r_max: Tensor, elastic: Tensor, threshold: float) -> Tensor:
    """r = r_max + |r_max - T| sigmoid(w) when r_max < T, else r_max - |r_max - T| sigmoid(w)."""
    delta = (r_max - threshold).abs() * torch.sigmoid(elastic)
    return torch.where(r_max < threshold, r_max + delta, r_max - delta)


def compatibility_loss(new_unit: Tensor, labels: Tensor, centres: Tensor, radius: Tensor, valid: Tensor) -> Tensor:
    """Mean over the violating samples (distance beyond the class radius) of distance - radius; 0 if none."""
    keep = valid[labels]
    excess = (new_unit[keep] - centres[labels[keep]]).norm(dim=1) - radius[labels[keep]]
    violating = excess > 0
    if not violating.any():
        return new_unit.sum() * 0
    return excess[violating].mean()


def grl_alpha(progress: float) -> float:
    """The gradient-reversal schedule 2 / (1 + exp(-10 p)) - 1 (DANN, as in AdvBCT)."""
    return 2.0 / (1.0 + math.exp(-10.0 * progress)) - 1.0


def discriminator(dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, 100), nn.BatchNorm1d(100), nn.ReLU(), nn.Linear(100, 2), nn.LogSoftmax(dim=1))


def adversarial_loss(disc: nn.Module, new_unit: Tensor, old_unit: Tensor, alpha: float) -> Tensor:
    """NLL(disc(GRL(new)) -> 0) + NLL(disc(old) -> 1), both halves in one batch."""
    log_probs = disc(torch.cat([grad_reverse(new_unit, alpha), old_unit]))
    n = len(new_unit)
    new_target = torch.zeros(n, dtype=torch.long, device=new_unit.device)
    old_target = torch.ones(len(old_unit), dtype=torch.long, device=new_unit.device)
    return F.nll_loss(log_probs[:n], new_target) + F.nll_loss(log_probs[n:], old_target)


class AdvBCT(CompatibilityMethod):
    name = "advbct"
    requires = ("trains",)
    description = "CE + elastic-boundary compatibility + old/new discriminator with gradient reversal (Pan et al. 2023)"
    Params = AdvBCTParams
    meta: tuple[Tensor, Tensor, Tensor] | None = None  # old centres, r_max, valid classes
    iteration = 0
    trainable: nn.Module | None = None  # the step's elastic weights and discriminator

    def before_step(self, model: Network, ctx: StepContext) -> list[nn.Module]:
        """The old classes' boundaries; the elastic weights and the discriminator, trained for this step only."""
        self.meta, self.iteration, self.trainable = None, 0, None
        if ctx.old_model is None:
            return []
        data = available_data(ctx)
        features = ctx.embed(ctx.old_model, data)
        self.meta = boundary_meta(features, data.labels, ctx.step.seen_classes, self.params.iqr_factor)
        module = nn.Module()
        module.elastic = nn.Parameter(torch.empty(ctx.step.seen_classes).uniform_(-1, 1))
        module.discriminator = discriminator(self.meta[0].shape[1])
        self.trainable = module
        return [module]

    def aligns(self, batch: Batch, ctx: StepContext) -> bool:
        return self.meta is not None

    def compatibility_terms(self, model: Network, out, batch: Batch, ctx: StepContext, ce: Tensor) -> dict[str, Tensor]:
        per_epoch, total = ctx.clock()
        epoch, progress = self.iteration // per_epoch, self.iteration / total
        self.iteration += 1
        centres, r_max, valid = self.meta
        aux = self.trainable
        new_unit = F.normalize(match_size(out.features.float(), centres.shape[1]), dim=1)
        radius = elastic_radius(r_max, aux.elastic, self.params.threshold)
        comp = compatibility_loss(new_unit, batch.labels, centres, radius, valid)
        terms = {"compatibility": comp}
        total_loss = ce + comp
        if self.params.adversarial:
            old_unit = old_unit_features(ctx, batch.images)
            adv = adversarial_loss(aux.discriminator, new_unit, old_unit, grl_alpha(progress))
            total_loss = total_loss + adv * adversarial_weight(epoch, ctx.train.epochs)
            terms["adversarial"] = adv
        return {"loss": total_loss, **terms}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [AdvBCT]
