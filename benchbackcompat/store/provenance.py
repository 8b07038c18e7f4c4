"""Provenance that a record carries: the commit of the benchbackcompat code that computed it."""
from __future__ import annotations

import importlib.metadata as metadata
import json
import subprocess
import tomllib
from pathlib import Path


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
