"""``benchbackcompat new-method NAME``: an installable method plugin package with a working method.

The package (``bbc-NAME``, import name ``bbc_NAME``) holds a pyproject.toml with the entry point,
the method module (cross-entropy plus a compatibility term towards the frozen old model: the
worked example of docs/writing-a-method.md), a test file running the conformance suite, and a
README. ``pip install -e DIR`` makes ``NAME`` appear in ``benchbackcompat list methods``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from benchbackcompat.errors import BenchError

NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")

METHOD_TEMPLATE = '''\
"""``$name``: cross-entropy plus a compatibility term towards the frozen old model.

L = CE(W phi_new(x), y) + weight * mean_i (1 - cos(phi_new(x_i), phi_old(x_i))): the new model's
features are pulled towards the old model's features of the same images, so a new query can be
compared with the gallery that the old model indexed.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor

import benchbackcompat
from benchbackcompat.scenarios import ScenarioBase
from benchbackcompat.method import Batch, CompatibilityMethod, Method, MethodParams, StepContext
from benchbackcompat.models.network import Network, NetworkOutput


class ${cls}Params(MethodParams):
    """Hyperparameters: ``--set methods.$name.weight=2`` on the command line. Unknown keys are rejected."""

    weight: float = Field(1.0, ge=0, description="weight of the compatibility term")


class $cls(CompatibilityMethod):
    name = "$name"
    description = "cross-entropy + cosine distance to the frozen old model's features"
    Params = ${cls}Params
    requires = ("trains",)  # scenario traits it needs: a model-zoo only evaluates already-trained models

    def unsupported_reason(self, scenario: ScenarioBase) -> str | None:
        if scenario.model.embedding_dim is None:
            return "$name compares old and new features directly; set model.embedding_dim so that their sizes match"
        return super().unsupported_reason(scenario)

    def compatibility_terms(self, model: Network, out: NetworkOutput, batch: Batch, ctx: StepContext,
                            ce: Tensor) -> dict[str, Tensor]:
        """Called once there is an old model (the first model trains with cross-entropy ``ce`` alone)."""
        with torch.no_grad():  # the old model is frozen
            old = ctx.old_model.embed(batch.images)
        compat = 1 - F.cosine_similarity(out.features.float(), old.float(), dim=1).mean()
        return {"loss": ce + self.params.weight * compat, "compat": compat}


@benchbackcompat.hookimpl
def bbc_register_methods() -> list[type[Method]]:
    return [$cls]
'''

TEST_TEMPLATE = '''\
"""Tests of the ``$name`` method: the benchbackcompat conformance suite, then the loss itself."""
from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn.functional as F

from benchbackcompat.method import Batch, frozen_copy
from benchbackcompat.models.network import build_network
from benchbackcompat.testing import check_method
from $pkg.method import $cls


def test_conformance(tmp_path):
    check_method("$name", workdir=tmp_path)  # raises ConformanceError listing every failed check


def test_compatibility_term_is_zero_against_itself_and_positive_against_another_model():
    torch.manual_seed(0)
    model = build_network("convnet-s", num_classes=4, embedding_dim=8, image_size=16).eval()  # batch norm as the old model's
    batch = Batch(torch.randn(6, 3, 16, 16), torch.arange(6) % 4, torch.zeros(6, dtype=torch.bool))
    method = $cls($cls.Params(weight=2.0))
    same = method.loss(model, batch, SimpleNamespace(old_model=frozen_copy(model)))
    assert same["compat"].item() < 1e-5
    other = frozen_copy(build_network("convnet-s", num_classes=4, embedding_dim=8, image_size=16))
    terms = method.loss(model, batch, SimpleNamespace(old_model=other))
    expected = 1 - F.cosine_similarity(model.embed(batch.images), other.embed(batch.images), dim=1).mean()
    assert torch.allclose(terms["compat"], expected)
    assert torch.allclose(terms["loss"], terms["ce"] + 2.0 * expected)
'''

PYPROJECT_TEMPLATE = '''\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "The $name method for benchbackcompat"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["benchbackcompat"]

[project.optional-dependencies]
test = ["pytest>=7"]

# benchbackcompat finds methods through this entry point group: the name is the method's name.
[project.entry-points.benchbackcompat]
$name = "$pkg.method"

[tool.setuptools]
packages = ["$pkg"]
'''

README_TEMPLATE = '''\
# $dist

The `$name` method for the `benchbackcompat` benchmark of backward-compatible representations: cross-entropy
plus a compatibility term that pulls the new model's features towards the frozen old model's.
Edit `$pkg/method.py`; see the benchbackcompat guide `docs/writing-a-method.md`.

```bash
pip install -e ".[test]"
benchbackcompat list methods                                   # $name is listed
benchbackcompat run --scenario ext-class --methods independent,$name
python -m pytest tests                                         # the conformance suite and the loss tests
```

Publish: `python -m build` then `twine upload dist/*`; users `pip install $dist`.
'''


@dataclass(frozen=True)
class Names:
    """The names derived from a method name ``my-method``."""

    method: str  # my-method
    dist: str  # bbc-my-method
    package: str  # bbc_my_method
    cls: str  # MyMethod

    @classmethod
    def of(cls, name: str) -> Names:
        if not NAME_PATTERN.fullmatch(name):
            raise BenchError(f"method name {name!r} is not valid: use lower-case letters, digits and single hyphens, "
                             "starting with a letter (e.g. my-method)")
        return cls(name, f"bbc-{name}", "bbc_" + name.replace("-", "_"), "".join(p.capitalize() for p in name.split("-")))


def render(name: str) -> dict[str, str]:
    """The files of the plugin package of ``name``, by relative path."""
    names = Names.of(name)
    values = {"name": names.method, "dist": names.dist, "pkg": names.package, "cls": names.cls}
    files = {
        "pyproject.toml": PYPROJECT_TEMPLATE,
        "README.md": README_TEMPLATE,
        f"{names.package}/__init__.py": f'"""The {name} method for benchbackcompat."""\n',
        f"{names.package}/method.py": METHOD_TEMPLATE,
        f"tests/test_{names.package}.py": TEST_TEMPLATE,
    }
    return {path: Template(text).substitute(values) for path, text in files.items()}


def create_plugin(name: str, directory: Path | None = None) -> list[Path]:
    """Write the plugin package of ``name`` into ``directory`` (default ``./bbc-NAME``); returns the files."""
    from benchbackcompat.execution.plugin_host import PluginHost

    names = Names.of(name)
    if name in PluginHost.entry_points():
        raise BenchError(f"a method named {name!r} is already installed; choose another name")
    directory = Path(directory) if directory is not None else Path(names.dist)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise BenchError(f"{directory} already exists and is not an empty folder; choose another --dir")
    written = []
    for relative, text in render(name).items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
