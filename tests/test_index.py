"""Retrieval through a FAISS index: the flat index reproduces exact search (cosine and Lorentz geodesic), IVF-PQ
runs on small galleries, and without faiss the option fails in one line naming the install command."""
from __future__ import annotations

import sys

import pytest
import torch

from benchbackcompat.config import IndexConfig
from benchbackcompat.engine.evaluate import compatibility_matrices
from benchbackcompat.errors import BenchError
from benchbackcompat.method import StandardMethod
from benchbackcompat.metrics import index as ix

from test_backfill import lorentz_method, setup


def test_missing_faiss_fails_in_one_line_naming_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss now raises ImportError
    with pytest.raises(BenchError) as error:
        ix.require_faiss()
    assert "pip install 'benchbackcompat[faiss]'" in str(error.value) and "\n" not in str(error.value)


def test_a_scenario_with_an_index_fails_before_training_without_faiss(monkeypatch):
    from benchbackcompat.execution.presets import load_preset, resolve_scenarios

    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(BenchError, match=r"pip install 'benchbackcompat\[faiss\]'"):
        resolve_scenarios("quick", load_preset("quick"), ["ext-class"], {"index": {"kinds": ["flat"]}})


@pytest.mark.parametrize("method_name", ["standard", "lorentz", "psp"])
@pytest.mark.parametrize("protocol", ["nn", "loo"])
def test_flat_index_reproduces_exact_search(protocol, method_name):
    pytest.importorskip("faiss", reason="the index option needs faiss (pip install 'benchbackcompat[faiss]')")
    from benchbackcompat.engine.indexed import index_matrices

    method, bank, data = setup(protocol, 3, method_name)
    metrics = ["cmc@1", "cmc@5"]
    exact, _ = compatibility_matrices(method, bank, data, protocol, metrics, seed=0)
    found = index_matrices(method, bank, data, protocol, metrics, IndexConfig(kinds=["flat", "ivf-pq"], pq_m=2))
    for metric in metrics:
        for t in range(3):
            for k in range(t + 1):
                assert found["matrices"]["flat"][metric][t][k] == pytest.approx(exact[metric][t][k]), (metric, t, k)
                assert 0 <= found["matrices"]["ivf-pq"][metric][t][k] <= 100


def test_lorentz_inner_product_form_orders_as_the_geodesic_distance():
    from benchbackcompat import geometry

    method = lorentz_method()
    gen = torch.Generator().manual_seed(0)
    q, g = (geometry.lift(torch.randn(n, 5, generator=gen)) for n in (7, 40))
    qi, gi = method.index_features(q, g)
    by_distance = method.similarity()(q, g).argsort(1, descending=True)
    by_inner = (qi @ gi.T).argsort(1, descending=True)
    assert torch.equal(by_distance, by_inner)


def test_effective_sizes_on_a_small_gallery():
    assert ix.effective(IndexConfig(), 600) == {"nlist": 15, "nprobe": 4, "pq_m": 8, "pq_bits": 8}
    assert ix.effective(IndexConfig(nlist=64, nprobe=32), 80) == {"nlist": 2, "nprobe": 2, "pq_m": 8, "pq_bits": 6}


def test_a_similarity_without_an_inner_product_form_is_refused():
    class Euclidean(StandardMethod):
        name = "euclidean"

        def similarity(self):
            from benchbackcompat.metrics.retrieval import negative_squared_euclidean

            return negative_squared_euclidean

    with pytest.raises(BenchError, match="euclidean: its similarity has no inner-product form"):
        Euclidean().index_features(torch.randn(8, 3), torch.randn(8, 3))  # -||q - g||^2 of free-norm features
    unit = torch.nn.functional.normalize(torch.randn(8, 3), dim=1)  # of unit features it is 2 <q, g> - 2: monotone
    with pytest.raises(BenchError, match="no inner-product form"):  # but not the inner product plus a constant
        Euclidean().index_features(unit, unit)


def test_milvus_lite_with_ivf_pq_is_refused_before_training():
    from benchbackcompat.execution.presets import load_preset, resolve_scenarios

    with pytest.raises(BenchError, match=r"index: .*Milvus Lite .* has no IVF_PQ index: set kinds=\[\"flat\"\]"):
        resolve_scenarios("quick", load_preset("quick"), ["ext-class"], {"index": {"backend": "milvus"}})
    server = IndexConfig(backend="milvus", milvus_uri="http://milvus.example.org:19530")  # a server has IVF_PQ
    assert server.kinds == ["flat", "ivf-pq"]


def test_the_published_index_records_keep_their_cell_keys():
    """The backend fields are left out of the dump at their defaults, so a configuration of the published records
    (FAISS, as every stored record ran) dumps, and keys its cells, exactly as before the fields existed."""
    from benchbackcompat.config import IndexConfig

    assert IndexConfig().model_dump() == {"kinds": ["flat", "ivf-pq"], "nlist": 16, "nprobe": 4, "pq_m": 8,
                                          "pq_bits": 8}
    assert IndexConfig(backend="milvus", kinds=["flat"]).model_dump()["backend"] == "milvus"
