"""The conformance suite: every first-party method passes it, and it catches each kind of violation.

Budget: one tiny scenario per family a method supports plus one determinism re-run, about two
seconds of CPU per method (8 x 8 images, 6 classes, one epoch), so the ~21 methods take well
under three minutes on two cores.
"""
from __future__ import annotations

import itertools
import sys
import textwrap

import pytest
import torch.nn.functional as F
from pydantic import BaseModel

from benchbackcompat.scenarios.kinds import SCENARIO_KINDS
from benchbackcompat.errors import BenchError
from benchbackcompat.method import Method, MethodParams
from benchbackcompat.testing import Conformance, ConformanceError, check_method, installed_methods

pytest_plugins = ["pytester"]
FIRST_PARTY = installed_methods("benchbackcompat")  # at collection time, without importing the plugins


@pytest.fixture(scope="module")
def conformance(tmp_path_factory):
    return Conformance(tmp_path_factory.mktemp("conformance"))


def test_first_party_methods_are_collected_from_the_entry_points():
    assert {"independent", "l2", "er", "hoc", "hbct", "psp"} <= set(FIRST_PARTY)


@pytest.mark.slow
@pytest.mark.parametrize("name", FIRST_PARTY)
def test_first_party_method_conforms(name, conformance):
    # a plugin that fails to import raises BenchError here: the test fails, it is never skipped
    conformance.check(name).raise_for_failures()


@pytest.mark.slow
def test_l2_conforms_in_every_scenario_kind(conformance):
    report = conformance.check("l2", kinds="all").raise_for_failures()
    trained = {r.name[len("train["):-1] for r in report.results if r.name.startswith("train[")}
    assert trained == set(SCENARIO_KINDS) - {"model-zoo"}  # l2 trains its models: a model zoo has nothing to train


# --- the suite catches violations ---------------------------------------------------------------
_names = (f"bad-{i}" for i in itertools.count())


def make_method(**members) -> type[Method]:
    """A Method subclass (one supported kind unless overridden) with a unique name."""
    members = {"name": next(_names), "description": "a method under test",
               "unsupported_reason": lambda self, s: None if s.kind == "ext-class" else "only ext-class", **members}
    return type("Probe", (Method,), members)


def failures(conformance: Conformance, cls: type[Method]) -> dict[str, str]:
    return {r.name: r.detail for r in conformance.check(cls).failures}


def test_a_conforming_probe_passes(conformance):
    assert failures(conformance, make_method()) == {}


def test_params_that_accept_unknown_keys_fail(conformance):
    class Loose(BaseModel):
        weight: float = 1.0

    assert "accepts unknown keys" in failures(conformance, make_method(Params=Loose))["params"]


def test_params_without_defaults_fail(conformance):
    class Required(MethodParams):
        weight: float

    assert "weight: Field required" in failures(conformance, make_method(Params=Required))["params"]


def test_an_empty_unsupported_reason_fails(conformance):
    cls = make_method(unsupported_reason=lambda self, s: None if s.kind == "ext-class" else "")
    assert "non-empty reason" in failures(conformance, cls)["scenarios"]


def test_a_method_without_a_name_fails(conformance):
    cls = make_method()
    cls.name = Method.name
    with pytest.raises(ConformanceError, match="name must be set"):
        check_method(cls)


@pytest.mark.slow
def test_non_finite_losses_fail(conformance):
    def loss(self, model, batch, ctx):
        ce = F.cross_entropy(model(batch.images).logits, batch.labels)
        return {"loss": ce * float("nan"), "ce": ce}

    assert "diverged" in failures(conformance, make_method(loss=loss))["train[ext-class]"]


@pytest.mark.slow
def test_features_of_an_undeclared_size_fail_and_declared_ones_pass(conformance):
    features = lambda self, model, images: model.embed(images)[:, :3]  # noqa: E731
    assert "3 dims but the declared size is 8" in failures(conformance, make_method(features=features))["train[ext-class]"]
    assert failures(conformance, make_method(features=features, feature_size=lambda self, model: 3)) == {}


@pytest.mark.slow
def test_a_method_that_is_not_deterministic_fails(conformance):
    calls = itertools.count()

    def loss(self, model, batch, ctx):  # the weight changes from run to run: same seed, other numbers
        ce = F.cross_entropy(model(batch.images).logits, batch.labels)
        return {"loss": ce * (1 + next(calls) / 10), "ce": ce}

    found = failures(conformance, make_method(loss=loss))
    assert list(found) == ["determinism[ext-class]"] and "loss curves differ" in found["determinism[ext-class]"]


def test_a_plugin_that_fails_to_import_fails_its_check(tmp_path, monkeypatch):
    (tmp_path / "broken_probe.py").write_text("raise ImportError('needs the missing package frobnicate')\n")
    dist = tmp_path / "broken_probe-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-probe\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[benchbackcompat]\nbroken-probe = broken_probe\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert installed_methods("broken-probe") == ["broken-probe"]
    with pytest.raises(BenchError, match="failed to import.*frobnicate"):
        Conformance(tmp_path).check("broken-probe")
    sys.modules.pop("broken_probe", None)


# --- the pytest plugin ------------------------------------------------------------------------
@pytest.mark.slow
def test_pytest_plugin_runs_the_suite_on_named_methods_and_offers_a_fixture(pytester):
    pytester.makepyfile(test_fixture=textwrap.dedent("""
        def test_independent_with_the_fixture(bbc_conformance):
            report = bbc_conformance.check("independent", kinds=["model-zoo"]).raise_for_failures()
            assert [r.name for r in report.results][-1] == "determinism[model-zoo]"
    """))
    result = pytester.runpytest_inprocess("-p", "benchbackcompat.testing.pytest_plugin", "--bbc-conformance",
                                          "independent,er", "--bbc-conformance-kinds", "model-zoo")
    result.assert_outcomes(passed=2, failed=1)  # er fine-tunes with replay: it does not support model-zoo
    result.stdout.fnmatch_lines(["*conformance of er*"])
    assert "kinds ['model-zoo'] are not supported by the method" in result.stdout.str()


def test_pytest_plugin_is_not_auto_loaded(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess("--bbc-conformance", "independent")
    assert result.ret != 0 and "unrecognized arguments: --bbc-conformance" in result.stderr.str()
