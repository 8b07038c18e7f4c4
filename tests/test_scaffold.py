"""``benchbackcompat new-method``: the scaffolded package installs, lists, runs and passes its own tests.

The scaffolded method is the worked example of docs/writing-a-method.md, so this test keeps the
guide's example working.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from benchbackcompat.cli import main
from benchbackcompat.errors import BenchError
from benchbackcompat.cli.scaffold import Names, create_plugin, render

TINY = ["--set", "data.num_classes=6", "--set", "data.train_per_class=16", "--set", "data.test_per_class=6",
        "--set", "data.image_size=8", "--set", "train.epochs=1", "--set", "train.batch_size=16",
        "--set", "model.backbone=convnet-s", "--set", "model.embedding_dim=8"]


def test_names_are_derived_and_validated():
    assert Names.of("my-method") == Names("my-method", "bbc-my-method", "bbc_my_method", "MyMethod")
    for bad in ("My-Method", "my_method", "-x", "x--y", "9lives", ""):
        with pytest.raises(BenchError, match="not valid"):
            Names.of(bad)


def test_rendered_files_are_valid_python_and_toml():
    files = render("my-method")
    assert set(files) == {"pyproject.toml", "README.md", "bbc_my_method/__init__.py", "bbc_my_method/method.py",
                          "tests/test_bbc_my_method.py"}
    project = tomllib.loads(files["pyproject.toml"])
    assert project["project"]["entry-points"]["benchbackcompat"] == {"my-method": "bbc_my_method.method"}
    assert project["tool"]["setuptools"]["packages"] == ["bbc_my_method"]
    for path, text in files.items():
        if path.endswith(".py"):
            compile(text, path, "exec")
    assert 'name = "my-method"' in files["bbc_my_method/method.py"]
    assert "://" not in "".join(files.values())  # no address the project does not publish (a placeholder link)


def test_refuses_a_non_empty_folder_and_an_installed_name(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    with pytest.raises(BenchError, match="not an empty folder"):
        create_plugin("fresh-name", tmp_path / "taken")
    with pytest.raises(BenchError, match="'l2' is already installed"):
        create_plugin("l2", tmp_path / "other")
    assert main(["new-method", "Bad_Name", "--dir", str(tmp_path / "bad")]) == 2 and not (tmp_path / "bad").exists()


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


@pytest.fixture
def installed_plugin(tmp_path):
    """A scaffolded plugin installed (editable) into this environment, uninstalled afterwards."""
    name = f"scaffold-probe-{os.getpid()}"
    root = tmp_path / "plugin"
    assert main(["new-method", name, "--dir", str(root)]) == 0
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "-e", str(root)]
    try:
        subprocess.run(install, check=True, capture_output=True, text=True, timeout=300)
        yield name, root
    finally:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", Names.of(name).dist],
                       capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_scaffolded_plugin_installs_lists_runs_and_passes_its_conformance_tests(installed_plugin, tmp_path):
    name, root = installed_plugin
    out = tmp_path / "runs"
    commands = [["list", "methods"], ["run", "--scenario", "ext-class", "--methods", name, "--out", str(out), *TINY]]
    # both CLI commands in one fresh interpreter (it sees the plugin as a new process would), one torch import
    cli = _cli("-c", f"from benchbackcompat.cli import main; raise SystemExit(max(main(c) for c in {commands!r}))")
    assert cli.returncode == 0, cli.stderr
    assert any(line.startswith(f"| {name} ") and "available" in line for line in cli.stdout.splitlines())
    (record,) = [json.loads(gzip.decompress(p.read_bytes())) for p in out.glob("cells/*/record.json.gz")]
    assert record["status"] == "finished" and record["method"] == name
    assert record["versions"]["plugins"][name] == f"{Names.of(name).dist} 0.1.0"
    (curves,) = [json.loads(gzip.decompress(p.read_bytes())) for p in out.glob("cells/*/curves.json.gz")]
    assert "compat" in curves["1"][0]  # the new model trained with the compatibility term

    tests = _cli("-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "tests"), cwd=root)
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert "2 passed" in tests.stdout
