"""Already-trained classifiers for the ``model-zoo`` scenario: encoder (features) + own classifier (logits).

Names: ``timm:<model>``, ``torchvision:<model>[.<WEIGHTS>]`` (e.g. ``torchvision:resnet50.IMAGENET1K_V1``;
default: the library's DEFAULT weights) or a built-in backbone (given a random linear classifier).
``pretrained``: True loads the library's weights from its cache (downloading when online; torchvision's files are
checked against the SHA-256 in their names and read as tensors only, see hub_weights; when the
file is neither cached nor reachable the error names it and where to put it), a path loads a local
checkpoint of the whole classifier, False keeps the random initialisation (tests of the plumbing).
Loaded models see the images in their own normalisation (the data's is undone first).
"""
from __future__ import annotations

import os
from unittest import mock

import torch
from torch import Tensor, nn

from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.models.heads import LinearHead
from benchbackcompat.models.hub_weights import load_published_state_dict
from benchbackcompat.models.network import Network
from benchbackcompat.models.registry import TIMM_PREFIX, create_backbone, load_weights

TORCHVISION_PREFIX = "torchvision:"
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
Stats = tuple[tuple[float, ...], tuple[float, ...]]


class Renormalise(nn.Module):
    """Maps images normalised with the data's statistics to the model's: x * s_d + m_d, then (. - m) / s."""

    def __init__(self, data: Stats, model: Stats) -> None:
        super().__init__()
        (dm, ds), (mm, ms) = ((_channels(m), _channels(s)) for m, s in (data, model))
        self.register_buffer("scale", ds / ms, persistent=False)
        self.register_buffer("shift", (dm - mm) / ms, persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        return x * self.scale + self.shift


def _channels(values: tuple[float, ...]) -> Tensor:
    return torch.tensor(values, dtype=torch.float32).view(1, -1, 1, 1)


class Encoder(nn.Sequential):
    """A backbone (optionally behind a Renormalise) with ``out_dim`` set."""

    def __init__(self, *modules: nn.Module, out_dim: int) -> None:
        super().__init__(*modules)
        self.out_dim = out_dim


def split_classifier(model: nn.Module, classifier: nn.Module) -> tuple[nn.Module, nn.Linear]:
    """Replace ``classifier`` (a submodule of ``model``) with an identity: ``model`` then returns the
    classifier's inputs (the encoder output) and ``classifier(model(x))`` the original logits."""
    if not isinstance(classifier, nn.Linear):
        raise BenchError(f"the zoo needs a model whose classifier is one linear layer, got {type(classifier).__name__}")
    name = next(n for n, m in model.named_modules() if m is classifier)
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent), child, nn.Identity())
    return model, classifier


def create_zoo_model(
    name: str, *, num_classes: int, image_size: int, in_chans: int, pretrained: bool | str | os.PathLike, data_stats: Stats
) -> Network:
    """The zoo model ``name`` as a Network: ``embed`` gives its encoder features, ``forward`` its logits."""
    stats: Stats | None = None
    if name.startswith(TIMM_PREFIX):
        model, stats = _timm_classifier(name[len(TIMM_PREFIX):], num_classes, image_size, in_chans, pretrained)
        backbone, head = split_classifier(model, model.get_classifier())
    elif name.startswith(TORCHVISION_PREFIX):
        model, stats = _torchvision_classifier(name[len(TORCHVISION_PREFIX):], num_classes, pretrained)
        linears = [m for m in model.modules() if isinstance(m, nn.Linear) and m.out_features == num_classes]
        if not linears:
            raise BenchError(f"zoo model {name!r} has no linear classifier with {num_classes} outputs")
        backbone, head = split_classifier(model, linears[-1])
    else:
        if pretrained is True:
            raise BenchError(f"zoo model {name!r} has no published weights; set weights.\"{name}\" to a checkpoint of it")
        backbone = create_backbone(name, image_size=image_size, in_chans=in_chans)
        network = Network(backbone, LinearHead(backbone.out_dim, num_classes))
        if pretrained:
            load_weights(network, pretrained)
        return network
    modules = [backbone] if stats is None else [Renormalise(data_stats, stats), backbone]
    return Network(Encoder(*modules, out_dim=head.in_features), head)


def _timm_classifier(model_name: str, num_classes: int, image_size: int, in_chans: int, pretrained) -> tuple[nn.Module, Stats | None]:
    import timm

    from benchbackcompat.models.timm_backbones import create_timm_backbone

    cfg = timm.models.get_pretrained_cfg(model_name) if timm.is_model(model_name) else None
    if pretrained is True and cfg is not None and cfg.num_classes != num_classes:
        raise BenchError(f"timm model {model_name!r} was trained on {cfg.num_classes} classes, not {num_classes}; set classes = {cfg.num_classes}")
    model = create_timm_backbone(model_name, image_size=image_size, in_chans=in_chans, download=pretrained is True,
                                 num_classes=num_classes)
    if pretrained and pretrained is not True:
        load_weights(model, pretrained)
    if not pretrained:
        return model, None
    return model, (tuple(model.pretrained_cfg["mean"]), tuple(model.pretrained_cfg["std"]))


def _torchvision_classifier(spec: str, num_classes: int, pretrained) -> tuple[nn.Module, Stats | None]:
    import torchvision.models as tvm

    arch, _, tag = spec.partition(".")
    known = tvm.list_models(module=tvm)
    if arch not in known:
        raise UnknownNameError("torchvision model", arch, known)
    if pretrained is not True:
        model = tvm.get_model(arch, weights=None, num_classes=num_classes)
        if not pretrained:
            return model, None
        load_weights(model, pretrained)
        return model, (IMAGENET_MEAN, IMAGENET_STD)
    choices = tvm.get_model_weights(arch)
    if tag and tag not in choices.__members__:
        raise UnknownNameError(f"weights of torchvision model {arch!r}", tag, choices.__members__)
    weights = choices[tag] if tag else choices.DEFAULT
    classes = len(weights.meta["categories"])
    if classes != num_classes:
        raise BenchError(f"torchvision weights {weights} classify {classes} classes, not {num_classes}; set classes = {classes}")
    name = f"torchvision:{spec}"
    state = load_published_state_dict(name, weights.url, config_key=f'weights."{name}"')
    # the builder sets the architecture from the weights, then loads them: hand it the state dict checked above
    with mock.patch.object(type(weights), "get_state_dict", lambda *args, **kwargs: state):
        model = tvm.get_model(arch, weights=weights)
    transform = weights.transforms()
    return model, (tuple(transform.mean), tuple(transform.std))

