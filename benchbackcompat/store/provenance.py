"""Provenance that a record carries: the commit and versions of the code that computed it, the worker process and
the device."""
from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import platform
import subprocess
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbackcompat.runtime.cpuinfo import processor_model
from benchbackcompat.version import __version__

if TYPE_CHECKING:
    import torch


def project_commit(root: Path | None = None) -> str | None:
    """The commit of this benchbackcompat, from the package itself, never from the working directory:

    - run from its own git checkout (an editable install): that checkout's HEAD (``+dirty`` if modified), but
      only when the checkout's top level is the benchbackcompat project, not a repository it is installed in;
    - installed by pip from a git URL: the commit pip recorded in the distribution's ``direct_url.json``;
    - otherwise None (recorded as "not recorded")."""
    root = root or Path(__file__).resolve().parents[2]
    if _is_project_checkout(root):
        return _git_commit(root)
    try:
        return recorded_commit(metadata.distribution("benchbackcompat").read_text("direct_url.json"))
    except metadata.PackageNotFoundError:
        return None


def _is_project_checkout(root: Path) -> bool:
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file() or tomllib.loads(pyproject.read_text()).get("project", {}).get("name") != "benchbackcompat":
        return False
    top = _git(root, "rev-parse", "--show-toplevel")
    return top is not None and Path(top).resolve() == root.resolve()


def _git(cwd: Path, *args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _git_commit(root: Path) -> str | None:
    sha = _git(root, "rev-parse", "--short=12", "HEAD")
    dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    return None if sha is None else f"{sha}+dirty" if dirty else sha


def recorded_commit(direct_url: str | None) -> str | None:
    """The 12-character commit of a PEP 610 ``direct_url.json`` written for a VCS install, or None."""
    try:
        commit = json.loads(direct_url or "{}").get("vcs_info", {}).get("commit_id")
    except (json.JSONDecodeError, AttributeError):
        return None
    return commit[:12] if isinstance(commit, str) and commit else None


def versions(plugin_versions: dict[str, str]) -> dict[str, Any]:
    """The versions of the core, its commit, Python, torch, torchvision, timm and the plugins that computed a record."""
    import timm
    import torch
    import torchvision

    return {
        "benchbackcompat": __version__,
        "commit": project_commit(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "timm": timm.__version__,
        "plugins": plugin_versions,
    }


def worker_name(pid: int | None = None) -> str:
    """``host:pid`` of the process that computes a cell (several processes may share a results directory): this
    one, or process ``pid`` of this host."""
    return f"{platform.node()}:{os.getpid() if pid is None else pid}"


def device_name(device: torch.device) -> str:
    """The device as records name it. On a CPU: the threads, the vector instruction set torch's kernels use
    (``torch.backends.cpu.get_cpu_capability``) and the processor model, because fp32 training, though
    deterministic on one machine, rounds differently with a different thread count or instruction set (AVX2 against
    AVX-512), and on another processor with the same instruction set (HBCT's Lorentz models on TinyImageNet
    recompute exactly on one processor and not on another, where Euclidean models recompute on both)."""
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return f"mps ({platform.machine()})"
    return (f"cpu ({torch.get_num_threads()} threads, {platform.machine()}, "
            f"{torch.backends.cpu.get_cpu_capability()}, {processor_model()})")
