"""The commit a record names comes from the package itself, never from the repository around the working
directory or around the installation."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchbackcompat.store.provenance import project_commit, recorded_commit


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_an_enclosing_foreign_repository_is_not_taken_for_ours(tmp_path, monkeypatch):
    foreign = tmp_path / "someone-elses-project"
    (foreign / "venv" / "site-packages").mkdir(parents=True)
    (foreign / "pyproject.toml").write_text('[project]\nname = "their-tool"\n')
    git(foreign, "init", "-q")
    git(foreign, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-q", "--allow-empty", "-m", "theirs")
    theirs = git(foreign, "rev-parse", "--short=12", "HEAD")
    monkeypatch.chdir(foreign)
    for root in (foreign, foreign / "venv" / "site-packages"):
        assert project_commit(root) != theirs


def test_our_own_checkout_gives_its_head():
    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        pytest.skip("not running from a git checkout")
    assert project_commit(root).startswith(git(root, "rev-parse", "--short=12", "HEAD"))


def test_pip_vcs_install_metadata_names_the_commit():
    assert recorded_commit('{"url": "https://example.org/bbc.git", "vcs_info": {"vcs": "git", '
                           '"commit_id": "0123456789abcdef0123456789abcdef01234567"}}') == "0123456789ab"
    assert recorded_commit('{"url": "file:///src", "dir_info": {"editable": true}}') is None
    assert recorded_commit(None) is None and recorded_commit("not json") is None
