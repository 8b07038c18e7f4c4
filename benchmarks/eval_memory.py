"""Peak memory and time of a T x T compatibility-matrix evaluation, features held in memory vs
streamed from disk per matrix entry (``benchbackcompat.tooling.FeatureBank``).

The features are synthetic (what is measured is holding and scoring them, not extracting them):
model t gives an image of class y the feature c_t[y] + noise, L2-normalised, with class centres
c_t drawn from model t's seed, so the entries are real template top-1 accuracies (IAM-CL2R's
protocol: 50,000 queries, 10,000 gallery images averaged into class templates, 1023-d features of
the d-Simplex methods). Each mode runs in its own process; the table gives the process's peak
resident memory, the memory before any feature existed, the time, and whether the two modes'
matrices are identical.

    python benchmarks/eval_memory.py [--models 7,31] [--queries 50000] [--gallery 10000] [--dim 1023]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tabulate import tabulate

from benchbackcompat.data import ImageArrays
from benchbackcompat.method import StandardMethod
from benchbackcompat.tooling import FeatureBank, ModelFeatures, ScenarioData, compatibility_matrices

CLASSES = 10


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def synthetic(t: int, labels: torch.Tensor, dim: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1000 * t + seed)
    centres = torch.randn(CLASSES, dim, generator=gen)
    return F.normalize(centres[labels] + 2.0 * torch.randn(len(labels), dim, generator=gen), dim=1)


def measure(mode: str, models: int, queries: int, gallery: int, dim: int) -> dict:
    """One evaluation in this process: ``memory`` (every model's features held) or ``stream`` (spilled)."""
    q_labels, g_labels = torch.arange(queries) % CLASSES, torch.arange(gallery) % CLASSES
    placeholder = torch.zeros(1, 1, 1, 1, dtype=torch.uint8)
    query = ImageArrays(placeholder.expand(queries, 1, 1, 1), q_labels)
    gallery_set = ImageArrays(placeholder.expand(gallery, 1, 1, 1), g_labels)
    data = ScenarioData(query, query, gallery_set, None, (0.5,), (0.25,), 1, CLASSES, "synthetic")
    before = rss_mb()
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as spill:
        bank = FeatureBank(Path(spill) if mode == "stream" else None, budget_bytes=0)
        started = time.perf_counter()
        for t in range(models):
            bank.append(ModelFeatures(synthetic(t, q_labels, dim, 1), synthetic(t, g_labels, dim, 2)))
        matrices, _ = compatibility_matrices(StandardMethod(), bank, data, "template", ["top1"], seed=0)
        seconds = time.perf_counter() - started
        bank.close()
    digest = hashlib.sha256(json.dumps(matrices).encode()).hexdigest()[:12]
    return {"mode": mode, "models": models, "seconds": seconds, "peak_mb": rss_mb(), "before_mb": before,
            "matrix": digest, "C10": matrices["top1"][1][0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="7,31", help="comma-separated T")
    parser.add_argument("--queries", type=int, default=50_000)
    parser.add_argument("--gallery", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=1023)
    parser.add_argument("--memory-up-to", type=int, default=7, help="largest T also run with every feature held in memory")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, models = args.child.split(":")
        print(json.dumps(measure(mode, int(models), args.queries, args.gallery, args.dim)))
        return
    print(f"{args.queries} queries, {args.gallery} gallery images, {args.dim}-d features, template top-1; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    rows, digests = [], {}
    for models in (int(t) for t in args.models.split(",")):
        modes = ["memory", "stream"] if models <= args.memory_up_to else ["stream"]
        for mode in modes:
            child = [sys.executable, __file__, "--child", f"{mode}:{models}", "--queries", str(args.queries),
                     "--gallery", str(args.gallery), "--dim", str(args.dim)]
            result = json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
            digests.setdefault(models, set()).add(result["matrix"])
            rows.append([models, mode, f"{result['seconds']:.1f}", f"{result['peak_mb']:,.0f}", f"{result['before_mb']:,.0f}",
                         result["matrix"], f"{result['C10']:.2f}"])
            print(f"  T={models} {mode}: {result['seconds']:.1f} s, peak {result['peak_mb']:,.0f} MB", file=sys.stderr, flush=True)
    print(tabulate(rows, headers=["T", "features", "seconds", "peak RSS MB", "RSS before features MB", "matrix sha256",
                                  "C[1][0] %"], tablefmt="github"))
    same = all(len(d) == 1 for d in digests.values())
    print(f"\nmatrices identical across modes: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
