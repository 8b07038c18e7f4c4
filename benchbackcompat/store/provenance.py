"""Provenance that a record carries: the commit of the project checkout that computed it."""
from __future__ import annotations

import subprocess
from pathlib import Path


def project_commit(root: Path | None = None) -> str | None:
    """The git commit of the project checkout (``+dirty`` if modified), or None outside a git checkout."""
    cwd = root or Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True,
                               text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}+dirty" if dirty else sha
