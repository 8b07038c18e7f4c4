"""Backbones from timm (``timm:<model>``): pooled features (``num_classes=0``), ``out_dim`` set from
the model, ViT-style models built at the run's image size, and pretrained weights that fail fast
and clearly when they are neither cached nor downloadable."""
from __future__ import annotations

import difflib
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import timm
import torch
from huggingface_hub import constants as hf_constants
from huggingface_hub import try_to_load_from_cache
from torch import nn

from benchbackcompat.errors import BenchError, UnknownNameError

HF_HOST = "huggingface.co"
HF_FILENAMES = ("model.safetensors", "pytorch_model.bin")


def create_timm_backbone(model_name: str, *, image_size: int, in_chans: int, download: bool, **kwargs: Any) -> nn.Module:
    """A timm model without classifier; ``download`` loads timm's pretrained weights (cache first)."""
    if not timm.is_model(model_name):
        raise unknown_timm_model(model_name)
    args: dict[str, Any] = {"pretrained": download, "num_classes": 0, "in_chans": in_chans, **kwargs}
    if download:
        check_weights_reachable(model_name)
        cached = _cached_hf_weights(model_name)
        if cached is not None:  # load the cached file directly: no network round trip (and its retries)
            args["pretrained_cfg_overlay"] = {"file": cached}
    try:
        try:
            model = timm.create_model(model_name, img_size=image_size, **args)
        except TypeError as error:  # the model has no img_size argument (CNNs): build it as it is
            if "img_size" not in str(error):
                raise
            model = timm.create_model(model_name, **args)
    except OSError as error:
        raise BenchError(_weights_missing(model_name, f"{type(error).__name__}: {error}".splitlines()[0])) from None
    model.out_dim = int(getattr(model, "head_hidden_size", None) or model.num_features)
    return model


def unknown_timm_model(model_name: str) -> UnknownNameError:
    """UnknownNameError whose message lists the closest timm names (wildcard and fuzzy matches)."""
    arch = model_name.split(".")[0]
    close = timm.list_models(f"*{arch}*")[:5]
    close += [name for name in difflib.get_close_matches(arch, timm.list_models(), n=5) if name not in close]
    error = UnknownNameError("timm model", model_name, close)
    hint = f" Did you mean {close[0]!r}? Close names: {', '.join(close)}." if close else ""
    error.args = (f"unknown timm model {model_name!r}.{hint} See timm.list_models('*pattern*').",)
    return error


def check_weights_reachable(model_name: str) -> None:
    """Raise BenchError at once when timm's weights are not cached and their host does not resolve."""
    cfg = timm.models.get_pretrained_cfg(model_name)
    if cfg is None or not (cfg.hf_hub_id or cfg.url or cfg.file):
        raise BenchError(f"timm model {model_name!r} has no pretrained weights; use pretrained=False or a local checkpoint path")
    if cfg.file or _cached_hf_weights(model_name) is not None:
        return
    if not cfg.hf_hub_id and cfg.url and (Path(torch.hub.get_dir()) / "checkpoints" / Path(urlparse(cfg.url).path).name).is_file():
        return
    host = HF_HOST if cfg.hf_hub_id else urlparse(cfg.url).hostname
    try:
        socket.getaddrinfo(host, 443)
    except OSError:
        raise BenchError(_weights_missing(model_name, f"{host} is unreachable")) from None


def _cached_hf_weights(model_name: str) -> str | None:
    cfg = timm.models.get_pretrained_cfg(model_name)
    if cfg is None or not cfg.hf_hub_id:
        return None
    for filename in (cfg.hf_hub_filename,) if cfg.hf_hub_filename else HF_FILENAMES:
        path = try_to_load_from_cache(cfg.hf_hub_id, filename)
        if isinstance(path, str):
            return path
    return None


def _weights_missing(model_name: str, reason: str) -> str:
    cfg = timm.models.get_pretrained_cfg(model_name)
    if cfg is not None and cfg.hf_hub_id:
        filename = cfg.hf_hub_filename or HF_FILENAMES[0]
        source = f"https://{HF_HOST}/{cfg.hf_hub_id}/resolve/main/{filename}"
        cache = f"run once online to cache it under {hf_constants.HF_HUB_CACHE}"
    else:
        source = cfg.url if cfg is not None else "the model's weights"
        filename = Path(urlparse(source).path).name
        cache = f"put it in {os.path.join(torch.hub.get_dir(), 'checkpoints')}"
    return (
        f"pretrained weights for timm model {model_name!r} are not cached and cannot be downloaded ({reason}): "
        f"fetch {source} elsewhere and pass pretrained='<path>/{filename}' (scenarios: model.pretrained.\"timm:{model_name}\" "
        f"= \"<path>/{filename}\"; model-zoo scenarios: weights.\"timm:{model_name}\" = \"<path>/{filename}\"), or {cache}"
    )
