"""Published weights files in torch's hub cache (``<hub dir>/checkpoints``), loaded without trusting them.

Such a file is named ``<name>-<first hex digits of its SHA-256>.<ext>``; torch checks that hash only when it
downloads the file, so a file planted in the cache would be unpickled as it is. Here the hash is checked on
every load and the file is read with ``weights_only=True``: it may hold tensors, never code.
"""
from __future__ import annotations

import hashlib
import pickle
import re
import socket
from pathlib import Path
from urllib.parse import urlparse

import torch
from torch import Tensor

from benchbackcompat.errors import BenchError

HASH_IN_NAME = re.compile(r"-([a-f0-9]{8,})\.")


def cached_path(url: str) -> Path:
    """Where torch's hub cache keeps the file of ``url``."""
    return Path(torch.hub.get_dir()) / "checkpoints" / Path(urlparse(url).path).name


def name_hash(path: Path) -> str:
    """The SHA-256 prefix in ``path``'s name; BenchError when the name carries none."""
    match = HASH_IN_NAME.search(path.name)
    if match is None:
        raise BenchError(f"weights file {path} has no SHA-256 prefix in its name (<name>-<hex digits>.pth); it cannot be checked")
    return match.group(1)


def verify_name_hash(path: Path) -> None:
    """BenchError naming ``path`` when its SHA-256 does not start with the hash in its name."""
    expected = name_hash(path)
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    if not digest.hexdigest().startswith(expected):
        raise BenchError(
            f"weights file {path} is not the published file (its SHA-256 {digest.hexdigest()[:12]}... does not start with "
            f"{expected}, the hash in its name): delete it so that it is downloaded again, or fetch it anew"
        )


def load_state_dict_file(path: Path) -> dict[str, Tensor]:
    """The state dict in ``path`` after its name hash is verified, read with ``weights_only=True``."""
    verify_name_hash(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, ValueError, EOFError, OSError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise BenchError(f"weights file {path} is not a plain state dict of tensors ({reason}); delete it and fetch it anew") from None
    if not isinstance(state, dict) or not all(isinstance(value, Tensor) for value in state.values()):
        raise BenchError(f"weights file {path} holds no state dict of tensors; delete it and fetch it anew")
    return state


def load_published_state_dict(name: str, url: str, *, config_key: str) -> dict[str, Tensor]:
    """The state dict published at ``url``: from the hub cache, downloaded there first when absent (the
    download checks the hash too). Offline and absent: BenchError naming the file, where to put it and
    ``config_key`` (the setting that takes a local copy instead)."""
    path = cached_path(url)
    if not path.is_file():
        try:
            socket.getaddrinfo(urlparse(url).hostname, 443)
        except OSError:
            raise BenchError(
                f"pretrained weights of {name} are not cached and cannot be downloaded (no network): fetch {url} and put it "
                f"at {path}, or set {config_key} = \"<path>/{path.name}\" in the scenario"
            ) from None
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            torch.hub.download_url_to_file(url, str(path), hash_prefix=name_hash(path), progress=True)
        except (OSError, RuntimeError) as error:  # no connection, or the download has another hash
            raise BenchError(f"cannot download {url} to {path}: {str(error).strip().splitlines()[0]}") from None
    return load_state_dict_file(path)
