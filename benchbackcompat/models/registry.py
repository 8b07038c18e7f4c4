"""Backbone registry: built-in CIFAR-size backbones, ``timm:<model>`` for any timm model, and
loading of local checkpoints.

A backbone maps float B x C x H x W images to B x D pooled features and has ``out_dim = D``.
An entry's ``create`` is called as ``create(image_size=..., in_chans=..., **kwargs)``; plugins add
entries through the ``bbc_register_backbones`` hook."""
from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.models.convnet import convnet_m, convnet_s
from benchbackcompat.models.lenet import lenetpp
from benchbackcompat.models.regnet import regnety400mf
from benchbackcompat.models.resnet import resnet18, resnet18_imagenet, resnet20, resnet32
from benchbackcompat.models.senet import senet18

TIMM_PREFIX = "timm:"
# key prefixes a saved backbone may carry: DataParallel, a Network (backbone.), a wrapper (model.)
_PREFIXES = ("", "module.", "backbone.", "module.backbone.", "model.", "encoder.")


@dataclass(frozen=True)
class BackboneEntry:
    name: str
    description: str
    create: Callable[..., nn.Module]


BACKBONES: dict[str, BackboneEntry] = {
    entry.name: entry
    for entry in (
        BackboneEntry("resnet18", "ResNet-18, CIFAR stem (3x3 stride 1, no max-pool); 512-d", resnet18),
        BackboneEntry("resnet18-imagenet", "ResNet-18, ImageNet stem (7x7 stride 2 + max-pool), as iamcl2r; 512-d", resnet18_imagenet),
        BackboneEntry("resnet20", "CIFAR ResNet-20 of He et al. (16/32/64, option-A shortcuts); 64-d", resnet20),
        BackboneEntry("resnet32", "CIFAR ResNet-32 of He et al. (16/32/64, option-A shortcuts); 64-d", resnet32),
        BackboneEntry("senet18", "SENet-18: PreAct ResNet-18 with squeeze-excitation, CIFAR stem; 512-d", senet18),
        BackboneEntry("regnety400mf", "RegNetY-400MF, CIFAR stem (3x3 stride 1); 384-d", regnety400mf),
        BackboneEntry("lenetpp", "LeNet++ of Wen et al. (5x5 conv pairs 32/64/128, PReLU); out_dim kwarg, 128-d", lenetpp),
        BackboneEntry("convnet-s", "tiny 3-block ConvNet 32/64/128 for the CPU quick preset; 128-d", convnet_s),
        BackboneEntry("convnet-m", "tiny 3-block ConvNet 48/96/192, the quick preset's other architecture; 192-d", convnet_m),
    )
}


class Resized(nn.Module):
    """A backbone that sees its inputs resized to ``size`` x ``size`` (bilinear, on the inputs' device)."""

    def __init__(self, backbone: nn.Module, size: int) -> None:
        super().__init__()
        self.backbone, self.size = backbone, size
        self.out_dim = backbone.out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False)
        return self.backbone(x)


def list_backbones() -> list[str]:
    """Registered backbone names (any ``timm:<model>`` is accepted as well)."""
    return sorted(BACKBONES)


def create_backbone(
    name: str, *, image_size: int = 32, in_chans: int = 3, pretrained: bool | str | os.PathLike = False,
    input_size: int | None = None, **kwargs: Any
) -> nn.Module:
    """Create backbone ``name``; ``pretrained``: False (random init), True (timm's published weights),
    or the path of a local checkpoint (a state dict, possibly nested under "state_dict"/"model").
    ``input_size``: build the backbone for that size and resize the ``image_size`` inputs to it inside the
    model (on the device, bilinear)."""
    if input_size is not None and input_size != image_size:
        inner = create_backbone(name, image_size=input_size, in_chans=in_chans, pretrained=pretrained, **kwargs)
        return Resized(inner, input_size)
    if name.startswith(TIMM_PREFIX):
        from benchbackcompat.models.timm_backbones import create_timm_backbone

        model = create_timm_backbone(
            name[len(TIMM_PREFIX) :], image_size=image_size, in_chans=in_chans, download=pretrained is True, **kwargs
        )
    else:
        if name not in BACKBONES:
            raise UnknownNameError("backbone", name, list_backbones())
        if pretrained is True:
            raise BenchError(
                f"backbone {name!r} has no published weights; pass pretrained='<path to a checkpoint>' or use a timm:<model> backbone"
            )
        model = BACKBONES[name].create(image_size=image_size, in_chans=in_chans, **kwargs)
        if not isinstance(getattr(model, "out_dim", None), int):
            raise BenchError(f"backbone {name!r} does not set an integer attribute out_dim (its feature size)")
    if pretrained and pretrained is not True:
        load_weights(model, pretrained)
    return model


def load_weights(model: nn.Module, path: str | os.PathLike) -> None:
    """Load a local checkpoint into ``model``: every weight of the model must be present with its
    shape; extra entries (a classifier, a projection) are ignored."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"pretrained checkpoint {path} does not exist; pass the path of a saved state dict (.pt, .pth, .safetensors)")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(path)
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, ValueError, pickle.UnpicklingError) as error:
        raise BenchError(f"cannot read pretrained checkpoint {path}: {str(error).splitlines()[0]}") from None
    for key in ("state_dict", "model", "net"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict):
        raise BenchError(f"pretrained checkpoint {path} holds no state dict")
    own = model.state_dict()
    prefix = max(_PREFIXES, key=lambda p: sum(k.startswith(p) and k[len(p) :] in own for k in state))
    state = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix) and k[len(prefix) :] in own}
    missing = sorted(set(own) - set(state))
    wrong = sorted(k for k, v in state.items() if v.shape != own[k].shape)
    if missing or wrong:
        bad = missing or wrong
        raise BenchError(
            f"pretrained checkpoint {path} does not fit this backbone ({len(missing)} weights missing, {len(wrong)} of "
            f"another shape, e.g. {bad[0]!r}); was it saved from another architecture?"
        )
    model.load_state_dict(state)
