"""How far each update moves a method's features, from the step checkpoints of a finished run (no training).

For every update t-1 -> t of a cell it prints:

- ``cos(old, new)``: the mean cosine between the old and the new model's features of the same image, on the
  images the update trains on and on the evaluation queries (1 = the new model did not move);
- ``old: other classes``: the mean cosine between the old model's features of images of different classes
  (how crowded the old space is: the closer to 1, the less drift a retrieval survives; it is also what the
  negatives of an InfoNCE alignment such as HOC's start from);
- the mean feature norms of both models.

Used to explain why HOC's AC stays 0 at the CPU scale (README, "CPU scale").

    python benchmarks/feature_drift.py --preset cpu --scenario iam-cl2r --methods hoc,er --seed 0 \
        --results leaderboard/records [--set methods.hoc.lam=1] [--updates 1,2,4]

The cell's step checkpoints must be in ``RESULTS/cells/KEY/`` (a run keeps them; the published
records do not carry them).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch
import torch.nn.functional as F
from tabulate import tabulate
from torch import Tensor

from benchbackcompat import BenchError
from benchbackcompat.data import normalise
from benchbackcompat.models import Network
from benchbackcompat.tooling import CellRunner, ResultStore, assign_fingerprints, plan_grid


def embed(model: Network, images: Tensor, stats: tuple, batch_size: int = 512) -> Tensor:
    """Features (not normalised) of uint8 ``images``, normalised with ``stats`` = (mean, std)."""
    with torch.no_grad():
        return torch.cat([model.embed(normalise(images[i:i + batch_size], *stats))
                          for i in range(0, len(images), batch_size)])


def other_class_cosine(features: Tensor, labels: Tensor) -> float:
    """Mean cosine between features of images of different classes."""
    unit = F.normalize(features, dim=1)
    different = labels[:, None] != labels[None, :]
    return float((unit @ unit.T)[different].mean())


def drift_rows(runner: CellRunner, updates: list[int]) -> list[list[object]]:
    """One row per update t (1-indexed model pairs t-1 -> t) of a cell whose steps are all saved."""
    missing = [s.index for s in runner.steps if not runner.store.step_path(runner.cell.key, s.index).is_file()]
    if missing:
        raise BenchError(f"{runner.cell.label}: no checkpoint of steps {missing} in {runner.store.cell_dir(runner.cell.key)}; "
                         "run the cell first (this script never trains)")
    models, _, _ = runner.run_steps()
    data, rows = runner.data, []
    train_stats = (data.mean, data.std)
    queries = {}  # model index -> its query features (a model is the new one of update t and the old one of t + 1)
    for t in updates:
        if not 1 <= t < len(models):
            raise BenchError(f"--updates {t}: {runner.cell.label} has updates 1 to {len(models) - 1}")
        train = data.step_data(runner.steps[t], runner.cell.seed)  # the images update t trains on
        old, new = embed(models[t - 1], train.images, train_stats), embed(models[t], train.images, train_stats)
        for index in (t - 1, t):
            if index not in queries:
                queries[index] = embed(models[index], data.query.images, data.query_stats)
        rows.append([runner.cell.label, f"{t - 1} -> {t}", len(train.labels),
                     F.cosine_similarity(old, new).mean().item(), F.cosine_similarity(queries[t - 1], queries[t]).mean().item(),
                     other_class_cosine(old, train.labels), other_class_cosine(queries[t - 1], data.query.labels),
                     old.norm(dim=1).mean().item(), new.norm(dim=1).mean().item()])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--methods", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="as `run --set`")
    parser.add_argument("--updates", default="1", help="updates t (model t-1 -> t) to measure, e.g. 1,2,4")
    args = parser.parse_args()
    torch.set_num_threads(1)
    try:
        plan = plan_grid(args.preset, args.scenario, args.methods, args.seed, assignments=args.set)
        data_of = assign_fingerprints(plan, torch.device("cpu"))  # each scenario's data loaded once
        rows = []
        for cell in plan.cells:
            data = data_of(cell.scenario.config)
            runner = CellRunner(cell, plan.methods[cell.method], data, ResultStore(args.results), torch.device("cpu"))
            rows += drift_rows(runner, [int(t) for t in args.updates.split(",") if t.strip()])
    except BenchError as error:
        raise SystemExit(f"error: {error}") from None
    print(tabulate(rows, floatfmt=".3f", tablefmt="github", headers=[
        "cell", "update", "training images", "cos(old, new) training", "cos(old, new) queries",
        "old: other classes, training", "old: other classes, queries", "norm old", "norm new"]))


if __name__ == "__main__":
    main()
