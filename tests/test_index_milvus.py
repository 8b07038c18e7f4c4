"""Retrieval through Milvus: Milvus Lite in a temporary file returns the exact top-k of a flat index (brute force
inner products), and the index option runs on that backend (skipped without pymilvus and milvus-lite)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from benchbackcompat.config import IndexConfig
from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import milvus

pytest.importorskip("pymilvus", reason="the Milvus backend needs pymilvus (pip install 'benchbackcompat[milvus]')")
pytest.importorskip("milvus_lite", reason="Milvus Lite needs milvus-lite (pip install 'benchbackcompat[milvus]')")


def test_milvus_lite_flat_search_is_exact_search():
    gen = torch.Generator().manual_seed(0)
    gallery, query = torch.randn(3000, 24, generator=gen), torch.randn(50, 24, generator=gen)
    found = milvus.search(query, gallery, "flat", IndexConfig(), 10)
    exact = (query.double() @ gallery.double().T).argsort(1, descending=True)[:, :10].numpy()
    assert np.array_equal(found, exact)


def test_milvus_lite_hnsw_finds_the_nearest_neighbour(tmp_path):
    gen = torch.Generator().manual_seed(1)
    gallery = torch.nn.functional.normalize(torch.randn(2000, 16, generator=gen), dim=1).numpy()
    collection = milvus.Collection(str(tmp_path / "hnsw.db"))
    try:
        collection.fill(gallery, "HNSW", {"M": 16, "efConstruction": 100})
        found = collection.search(gallery[:100], 1, {"ef": 64})
    finally:
        collection.close()
    assert (found[:, 0] == np.arange(100)).mean() >= 0.95  # each item's own vector is its largest inner product


def test_milvus_lite_without_ivf_pq_fails_in_one_line():
    with pytest.raises(BenchError) as error:
        milvus.search(torch.randn(5, 8), torch.randn(400, 8), "ivf-pq", IndexConfig(pq_m=2), 3)
    assert "IVF_PQ" in str(error.value) and "\n" not in str(error.value)


def test_the_index_option_through_milvus_lite_reproduces_exact_search():
    from benchbackcompat.engine.evaluate import compatibility_matrices
    from benchbackcompat.engine.indexed import index_matrices

    from test_backfill import setup

    method, bank, data = setup("nn", 2, "standard")
    exact, _ = compatibility_matrices(method, bank, data, "nn", ["cmc@1"], seed=0)
    found = index_matrices(method, bank, data, "nn", ["cmc@1"], IndexConfig(kinds=["flat"], backend="milvus"))
    for t, k in ((0, 0), (1, 0), (1, 1)):
        assert found["matrices"]["flat"]["cmc@1"][t][k] == pytest.approx(exact["cmc@1"][t][k])
