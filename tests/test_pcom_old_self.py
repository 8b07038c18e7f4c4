"""P_com divides by the self-test of the cross-test's own gallery model (HBCT, ICML 2025, Eq. 14: P_com is normalised with the old and reference models of the same geometry).

For every registered method on a tiny single update (8 x 8 images, 6 classes, one epoch), the record's
P_com must equal (C[1][0] - C[0][0]) / (reference_self - C[0][0]) written out from its own matrix:
numerator and denominator use the same old self-test, the one of the model that indexed the gallery.
"""
from __future__ import annotations

import math

import pytest
import torch

from benchbackcompat.cell import Cell
from benchbackcompat.engine.cell import CellRunner
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.scenarios.data import load_scenario_data
from benchbackcompat.store import ResultStore
from benchbackcompat.testing import installed_methods
from benchbackcompat.testing.scenarios import tiny_scenario

METHODS = installed_methods("benchbackcompat")
NOT_SINGLE_UPDATE = {"er", "dsimplex-fd"}  # replay-only methods: no single update, no P_com


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    named = tiny_scenario("ext-class")
    root = tmp_path_factory.mktemp("pcom")
    return named, load_scenario_data(named.config, root / "cache", torch.device("cpu")), root


@pytest.mark.slow
@pytest.mark.parametrize("name", METHODS)
def test_p_com_uses_the_gallery_models_own_self_test(name, tiny):
    named, data, root = tiny
    method = PluginHost().method_class(name)()
    if method.unsupported_reason(named.config):
        assert name in NOT_SINGLE_UPDATE
        return
    cell = Cell(named, name, method.params.model_dump(mode="json"), 0, "test")
    record = CellRunner(cell, method, data, ResultStore(root / name), torch.device("cpu")).run()
    for metric, values in record["metrics"].items():
        C = record["matrices"][metric]
        old_self, cross, reference = C[0][0], C[1][0], values["reference_self"]
        assert values["old_self"] == old_self and values["cross"] == cross
        assert "reference_old_self" not in values  # one old model: the gallery model of the cross-test
        if reference == old_self:
            assert math.isnan(values["p_com"])
        else:
            assert values["p_com"] == pytest.approx((cross - old_self) / (reference - old_self))
        assert values["p_up"] == pytest.approx((C[1][1] - reference) / reference)
