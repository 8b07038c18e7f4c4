"""Retrieval through the Milvus vector database (``pip install 'benchbackcompat[milvus]'``), the same top-k lists
as :mod:`benchbackcompat.metrics.index` gives from FAISS.

The gallery is inserted into a collection of one float vector field with an inner-product (``IP``) index of the
requested kind and searched with the mapped queries (``Method.index_features``). ``uri`` names where: empty, Milvus
Lite, the embedded local mode, in a file of a temporary folder (nothing to run beside the harness); otherwise a
Milvus server or cluster (``http://host:19530``, a Zilliz Cloud endpoint), with the token, if it needs one, in the
environment variable ``MILVUS_TOKEN`` (never in a scenario file). A collection is dropped after its search.

Milvus files every item into IVF lists by its own metric on the stored vector; for a similarity whose query and
gallery sides are mapped differently (Lorentz) that is not the criterion its queries probe with (FAISS's ``ivf-pq``
files them consistently, ``metrics.index``), so its IVF kinds are a lower bound there. Milvus Lite implements
``FLAT``, ``HNSW``, ``IVF_FLAT`` and their SQ8 variants but not ``IVF_PQ`` (a server does): the option's ``ivf-pq``
kind needs a server there.
"""
from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from torch import Tensor

from benchbackcompat.errors import BenchError
from benchbackcompat.metrics.index import effective, float32_rows

INSTALL = "pip install 'benchbackcompat[milvus]'"
LITE_TYPES = ("FLAT", "HNSW", "HNSW_SQ", "IVF_FLAT", "IVF_SQ8")  # what Milvus Lite builds (it ignores the others)
BATCH = 10_000  # rows per insert call (a gRPC message stays far below its size limit)


def require_client() -> Any:
    """pymilvus's ``MilvusClient``, or a one-line error naming the install command."""
    try:
        from pymilvus import MilvusClient
    except ImportError:
        raise BenchError(f"the index option's Milvus backend needs pymilvus, which is not installed: {INSTALL}") from None
    return MilvusClient


def index_spec(kind: str, config: Any, items: int) -> tuple[str, dict[str, int], dict[str, int]]:
    """Milvus's index type, build parameters and search parameters for the option's ``kind`` (``config``: an
    ``IndexConfig``; the IVF sizes capped on a small gallery as FAISS's are, ``metrics.index.effective``)."""
    if kind == "flat":
        return "FLAT", {}, {}
    sizes = effective(config, items)
    return ("IVF_PQ", {"nlist": sizes["nlist"], "m": sizes["pq_m"], "nbits": sizes["pq_bits"]},
            {"nprobe": sizes["nprobe"]})


def search(query: Tensor | np.ndarray, gallery: Tensor | np.ndarray, kind: str, config: Any, k: int,
           uri: str = "") -> np.ndarray:
    """The ``k`` gallery indices of largest inner product for each query through Milvus at ``uri`` (empty: Milvus
    Lite in a temporary file); -1 where it returns fewer."""
    with tempfile.TemporaryDirectory(prefix="bbc-milvus-") as folder:
        collection = Collection(uri or str(Path(folder) / "index.db"))
        try:
            g = float32_rows(gallery)
            index_type, build, params = index_spec(kind, config, len(g))
            collection.fill(g, index_type, build)
            return collection.search(float32_rows(query), k, params)
        finally:
            collection.close()


class Collection:
    """One gallery in a Milvus collection of its own (a fresh name), dropped on :meth:`close`."""

    def __init__(self, uri: str) -> None:
        client_class = require_client()
        from pymilvus import MilvusException

        self.uri, self.name = uri, f"bbc_{uuid.uuid4().hex}"
        self._error = MilvusException
        try:
            self.client = client_class(uri, token=os.environ.get("MILVUS_TOKEN", ""))
        except MilvusException as error:
            raise BenchError(f"Milvus at {uri}: {error.message} (check index.milvus_uri)") from None

    def fill(self, gallery: np.ndarray, index_type: str, build: dict[str, int]) -> None:
        """Create the collection with an inner-product index of ``index_type`` (Milvus's name: ``FLAT``,
        ``IVF_PQ``, ``HNSW``, ...) built with ``build`` and insert ``gallery`` (ids 0..n-1)."""
        from pymilvus import DataType

        if self.uri.endswith(".db") and index_type not in LITE_TYPES:  # a local file: Milvus Lite
            raise BenchError(f"Milvus Lite has no {index_type} index (it has {', '.join(LITE_TYPES)}): use kinds "
                             "['flat'] or a Milvus server (index.milvus_uri = 'http://host:19530')")
        try:
            schema = self.client.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=gallery.shape[1])
            index = self.client.prepare_index_params()
            index.add_index(field_name="vector", index_type=index_type, metric_type="IP", params=build)
            self.client.create_collection(self.name, schema=schema, index_params=index, consistency_level="Strong")
            for start in range(0, len(gallery), BATCH):
                rows = gallery[start:start + BATCH]
                self.client.insert(self.name, [{"id": start + i, "vector": row} for i, row in enumerate(rows.tolist())])
            self.client.flush(self.name)
            self.client.release_collection(self.name)  # loaded again: every sealed segment's index built now, not
            self.client.load_collection(self.name)  # in the background while the first searches scan it unindexed
        except (self._error, NotImplementedError) as error:
            raise BenchError(f"Milvus at {self.uri}: cannot build a {index_type} index "
                             f"({getattr(error, 'message', error)})") from None

    def search(self, query: np.ndarray, k: int, params: dict[str, int]) -> np.ndarray:
        """The ids of the ``k`` largest inner products per query, -1 where fewer came back (``params``: the
        index's search parameters, ``nprobe`` or ``ef``)."""
        found = np.full((len(query), k), -1, dtype=np.int64)
        for start in range(0, len(query), BATCH):
            hits = self.client.search(self.name, data=query[start:start + BATCH].tolist(), limit=k,
                                      search_params={"metric_type": "IP", "params": params})
            for row, ranked in enumerate(hits):
                ids = [hit["id"] for hit in ranked][:k]
                found[start + row, :len(ids)] = ids
        return found

    def close(self) -> None:
        """Drop the collection and close the connection."""
        try:
            if self.client.has_collection(self.name):
                self.client.drop_collection(self.name)
        finally:
            self.client.close()

