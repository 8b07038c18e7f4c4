"""Retrieval through an index at a practitioner's gallery size: recall against exact search, latency, size, build
time, and the index during a refresh.

Trains (or loads, from ``--out``) one cell of a preset (default: BCT on the quick preset's ``ext-class``, seed 0),
and builds a gallery of the scenario's items plus ``--items`` distractors: the features of augmented views of the
scenario's images (random image, flip, shift, brightness; ``tooling.view_features``) from the cell's models, so
every vector comes from a real model of the project. Queries are the new model's features of the scenario's images
(the cross-test: they search the gallery the old model indexed), mapped to inner products as the index option maps
them (``Method.index_features``; for a method whose query and gallery are mapped differently, Lorentz, the IVF lists
are filed as the queries probe them, as the option files them). For every index:

- ``flat`` (FAISS exact search), ``ivf-pq`` (FAISS, ``--nlist`` lists, PQ of d/4 bytes of 8 bits, the IVF lists
  filed as the queries probe them, swept over nprobe), ``hnsw`` (FAISS HNSW, M = 32, swept over efSearch) and
  ``milvus-hnsw`` (Milvus Lite's HNSW, M = 32, swept over ef);
- recall@10: the share of the exact top 10 (float64 inner products) among the index's top 10; latency per query (one
  query per call, median), QPS (all queries in one call, ``--threads`` threads), bytes per vector (the serialised
  index, or Milvus Lite's files, over the items), build time (train and add);
- the refresh: the gallery re-extracted by the new model (backfilled), into an IVF-PQ index whose lists and codebooks
  were trained on the old model's features (kept: only re-encoding) or retrained on the new ones: recall and the time
  each costs.

Prints Markdown tables (benchmarks/README.md, "Retrieval through an index at 100,000 items", quotes one run):

    PYTHONPATH=.:plugins python benchmarks/index_scale.py --items 100000 --out /tmp/index-scale
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np
from faiss.contrib.ivf_tools import add_preassigned
import torch

from benchbackcompat.tooling import (CellRunner, MilvusCollection, ResultStore, assign_fingerprints, build_index,
                                     create_method, plan_grid, view_features)


def gallery_and_queries(args: argparse.Namespace) -> tuple[torch.Tensor, ...]:
    """(old gallery, new gallery, queries, old gallery as queries see it, new gallery as queries see it) as float32
    inner-product features: the scenario's items then the distractors, by the old model and by the new one; the new
    model's queries."""
    plan = plan_grid(args.preset, [args.scenario], [args.method], [args.seed])
    device = torch.device("cpu")
    cell = plan.cells[0]
    runner = CellRunner(cell, create_method(cell.method, cell.params), assign_fingerprints(plan, device)(cell.scenario.config),
                        ResultStore(args.out), device, borrow_steps=False)
    models, _, _ = runner.run_steps()
    old, new = models[0], models[-1]
    started = time.perf_counter()
    items = [runner.features(runner.method, model, index) for index, model in ((0, old), (len(models) - 1, new))]
    views = view_features(runner, [old, new], args.items, seed=args.seed)
    print(f"features of {args.items:,} views from 2 models: {time.perf_counter() - started:.0f} s")
    method, last = runner.method, len(models) - 1
    old_gallery = torch.cat([(items[0].gallery if items[0].gallery is not None else items[0].query), views[0]])
    new_gallery = torch.cat([(items[1].gallery if items[1].gallery is not None else items[1].query), views[1]])
    query, old_stored = method.pair_features(items[1].query, old_gallery, last, 0)
    new_stored = method.pair_features(items[1].query, new_gallery, last, last)[1]
    old_as_query, new_as_query = (method.index_features(g, g)[0] for g in (old_stored, new_stored))
    query, old_gallery = method.index_features(query, old_stored)
    new_gallery = method.index_features(query, new_stored)[1]
    return tuple(x.float().contiguous() for x in (old_gallery, new_gallery, query, old_as_query, new_as_query))


def exact_top(gallery: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    """The exact top ``k`` by float64 inner products."""
    scores = query.astype(np.float64) @ gallery.astype(np.float64).T
    top = np.argpartition(-scores, k, axis=1)[:, :k]
    return np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, 1), 1), 1)


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    """recall@k: the share of the exact top k among the found top k (%)."""
    return 100.0 * np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found.tolist(), exact.tolist())])


def timed_search(search, query: np.ndarray, k: int, singles: int) -> tuple[np.ndarray, float, float]:
    """(top k of all queries in one call, median latency of one query in ms over ``singles`` calls, QPS)."""
    started = time.perf_counter()
    found = search(query, k)
    qps = len(query) / (time.perf_counter() - started)
    times = []
    for row in query[:singles]:
        started = time.perf_counter()
        search(row[None], k)
        times.append(time.perf_counter() - started)
    return found, 1000 * statistics.median(times), qps


def padded(x: np.ndarray, width: int) -> np.ndarray:
    """``x`` zero-padded to ``width`` columns (an IVF-PQ index pads to a multiple of its sub-quantisers)."""
    return np.ascontiguousarray(np.pad(x, ((0, 0), (0, width - x.shape[1]))), dtype=np.float32)


def faiss_bytes(index) -> float:
    return faiss.serialize_index(index).nbytes / index.ntotal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--scenario", default="ext-class")
    parser.add_argument("--method", default="bct")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--items", type=int, default=100_000, help="distractors beside the scenario's items")
    parser.add_argument("--nlist", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--singles", type=int, default=100, help="queries timed one by one")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bbc-index-scale")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    faiss.omp_set_num_threads(args.threads)
    old_tensor, new_tensor, query_tensor, old_as_query, new_as_query = gallery_and_queries(args)
    old, new, query = (x.numpy() for x in (old_tensor, new_tensor, query_tensor))
    n, d = old.shape
    k = 10
    exact = exact_top(old, query, k)
    pq_m = max(1, d // 4)
    print(f"\n{n:,} gallery vectors of {d} dimensions, {len(query)} queries, recall@{k} against exact search "
          f"({args.method}, {args.preset} {args.scenario}, seed {args.seed}, {args.threads} threads, load average "
          f"{os.getloadavg()[0]:.1f} at the start)\n")
    print("| index | parameter | recall@10 (%) | latency per query (ms) | QPS | bytes per vector | build (s) |")
    print("|---|---|---|---|---|---|---|")

    def report(name: str, built, build_s: float, size: float, sweep: list[tuple[str, object]], search) -> None:
        for label, setting in sweep:
            found, latency, qps = timed_search(lambda q, kk: search(built, setting, q, kk), query, k, args.singles)
            print(f"| {name} | {label} | {recall(found, exact):.1f} | {latency:.2f} | {qps:,.0f} | {size:,.0f} | "
                  f"{build_s:.1f} |")

    def faiss_search(index, setting, q, kk):
        if setting is not None:
            setting(index)
        return index.search(padded(q, index.d), kk)[1]

    started = time.perf_counter()
    flat = build_index(old_tensor, "flat", None)
    report("flat (faiss)", flat, time.perf_counter() - started, faiss_bytes(flat), [("exact", None)], faiss_search)

    config = argparse.Namespace(nlist=args.nlist, nprobe=1, pq_m=pq_m, pq_bits=8)
    started = time.perf_counter()
    ivf = build_index(old_tensor, "ivf-pq", config, old_as_query)
    ivf_build = time.perf_counter() - started
    sweep = [(f"nprobe {p}", lambda index, p=p: setattr(index, "nprobe", p)) for p in (1, 4, 16, 64)]
    report(f"ivf-pq (faiss, nlist {args.nlist}, {pq_m} B codes)", ivf, ivf_build, faiss_bytes(ivf), sweep,
           faiss_search)

    started = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 80
    hnsw.add(old)
    sweep = [(f"efSearch {e}", lambda index, e=e: setattr(index.hnsw, "efSearch", e)) for e in (16, 32, 64, 128)]
    report("hnsw (faiss, M 32)", hnsw, time.perf_counter() - started, faiss_bytes(hnsw), sweep, faiss_search)

    with tempfile.TemporaryDirectory(prefix="bbc-milvus-") as folder:
        started = time.perf_counter()
        collection = MilvusCollection(str(Path(folder) / "index.db"))
        try:
            collection.fill(old, "HNSW", {"M": 32, "efConstruction": 80})
            build_s = time.perf_counter() - started
            size = sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file()) / n
            report("hnsw (Milvus Lite, M 32)", collection, build_s, size,
                   [(f"ef {e}", {"ef": e}) for e in (16, 32, 64, 128)],
                   lambda c, params, q, kk: c.search(q, kk, params))
        finally:
            collection.close()

    refresh((old_tensor, old_as_query), (new_tensor, new_as_query), query, config, k)


def refresh(old: tuple[torch.Tensor, torch.Tensor], new: tuple[torch.Tensor, torch.Tensor], query: np.ndarray,
            config: argparse.Namespace, k: int) -> None:
    """The gallery backfilled with the new model's features into IVF-PQ: the old lists and codebooks kept (the new
    features only encoded and filed) or retrained on the new features; recall@10 at nprobe 16 and each one's cost."""
    exact = exact_top(new[0].numpy(), query, k)
    started = time.perf_counter()
    kept = build_index(old[0], "ivf-pq", config, old[1])
    kept.reset()  # the old model's items removed; its lists and codebooks stay
    trained_s = time.perf_counter() - started
    started = time.perf_counter()
    centroids = kept.quantizer.reconstruct_n(0, kept.nlist)
    stored, mapped = (padded(x.numpy(), kept.d) for x in new)
    add_preassigned(kept, stored, (mapped @ centroids.T).argmax(1))  # filed by the old lists, as queries probe
    kept_s = time.perf_counter() - started
    started = time.perf_counter()
    retrained = build_index(new[0], "ivf-pq", config, new[1])
    retrained_s = time.perf_counter() - started
    print(f"\nRefresh: every item re-extracted by the new model, IVF-PQ at nprobe 16 (old index trained in "
          f"{trained_s:.1f} s)\n")
    print("| the index's lists and codebooks | recall@10 (%) | time to refresh (s) |")
    print("|---|---|---|")
    for name, index, seconds in (("kept (old model's), new features encoded", kept, kept_s),
                                 ("retrained on the new features", retrained, retrained_s)):
        index.nprobe = 16
        print(f"| {name} | {recall(index.search(padded(query, index.d), k)[1], exact):.1f} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
