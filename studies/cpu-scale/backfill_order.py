"""Why the informed ("class-distance") refresh order loses to the random one on the CPU-scale ext-class scenario.

Runs the cells it needs (the preset's cells with ``backfill={}``, one CPU thread; their steps trained, or loaded
where saved, in ``--out``; no record written), keeps the features that the backfilling curves are computed from, and
measures on every cell, for several refresh orders:

- the backfilling curve (CMC@1, leave-one-out as the scenario) and its area; the curves of the two built-in
  orders are checked against the ones a run records (the script scores the mixed gallery by hand);
- at 10% and 20% refreshed: the share of queries whose top-1 is a refreshed item, the accuracy of those queries and
  of the others, the mean best score among refreshed items (new vs new) and among old ones (new query vs old
  item), the accuracy of a nearest-neighbour search *within the refreshed items only*, the classes with a refreshed
  item and the share of queries whose class has one (other than the query itself);
- the orders: ``random`` and ``class-distance`` (the engine's), ``typical-first`` (class-distance reversed: most
  similar to its class template first), and ``balanced-atypical`` / ``balanced-typical`` (one item per class in
  turn, each class's least / most typical item first: class-distance with every class covered as early as
  random covers it);
- a control with the refreshed items' scores shifted down by the mean gap between the best new-vs-new and the best
  new-vs-old score of a query (both galleries complete), so that refreshed items no longer win by scale alone.

``--results`` (read only) seeds ``--out`` with the shared models and the step checkpoints a grid run stored under
the same cell label, so a cell whose checkpoints still fit is evaluated without training (others are trained:
about a minute per cell at the cpu preset). CPU only, one thread; the study page's section "Refresh orders: the
literature's, a greedy oracle and the ceiling" quotes its output.

    PYTHONPATH=.:plugins python studies/cpu-scale/backfill_order.py --methods independent,bct,cores \\
        --seeds 0 --results UPGRADE_RESULTS --out OUT
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import torch

from benchbackcompat.tooling import (CellRunner, FeatureBank, ResultStore, area_under_curve, assign_fingerprints,
                                     cell_backfill_curves, cell_features, class_balanced_order, create_method,
                                     own_class_similarity, plan_grid, refresh_counts, refresh_orders)

FRACTIONS = (0.1, 0.2)


def stored_steps(results: Path) -> dict[str, list[Path]]:
    """The step checkpoints of a results folder, by cell label."""
    return {json.loads(p.read_text())["label"]: sorted(p.parent.glob("step-*.pt"))
            for p in (results / "cells").glob("*/cell.json")}


def seed_steps(store: ResultStore, key: str, stored: list[Path]) -> None:
    """Copy the ``stored`` step checkpoints (and their checksums) into cell ``key``'s folder of ``store``, where it
    has none of that step."""
    for step in stored:
        if not store.step_path(key, int(step.stem.split("-")[1])).exists():
            store.cell_dir(key).mkdir(parents=True, exist_ok=True)
            for path in (step, step.with_name(step.name + ".sha256")):
                if path.exists():
                    shutil.copy2(path, store.cell_dir(key) / path.name)


def run_and_capture(scenario: str, methods: list[str], seeds: list[int], preset: str, out: Path,
                    results: Path | None, assignments: list[str] = ()) -> list[dict]:
    """Run the cells (``backfill={}``, and ``assignments`` as ``--set`` options) into ``out`` and keep, per cell, the
    method, its features, the scenario data and the backfilling curves its record would hold; with ``results``, first
    copy its shared models into ``out`` and, before a cell runs, the step checkpoints stored under the same label (the
    cell loads those that fit this code's training key and trains the others)."""
    steps = stored_steps(results) if results is not None else {}
    if results is not None:
        (out / "models").mkdir(parents=True, exist_ok=True)
        for model in (results / "models").glob("*.pt*"):
            if not (out / "models" / model.name).exists():
                shutil.copy2(model, out / "models" / model.name)
    plan = plan_grid(preset, [scenario], methods, seeds, assignments=["backfill={}", *assignments])
    device = torch.device("cpu")
    data_of, store = assign_fingerprints(plan, device), ResultStore(out)
    captured: list[dict] = []
    for cell in plan.cells:
        seed_steps(store, cell.key, steps.get(cell.label, []))
        runner = CellRunner(cell, create_method(cell.method, cell.params), data_of(cell.scenario.config), store, device,
                            borrow_steps=False)  # as --force: the cell's own steps, or the stored ones, or trained
        features = cell_features(runner)
        captured.append({"method": runner.method, "seed": cell.seed, "data": runner.data,
                         "protocol": runner.scenario.protocol, "recorded": cell_backfill_curves(runner, features),
                         "features": features})
    return captured


def analyse(cell: dict) -> dict:
    method, data, features = cell["method"], cell["data"], cell["features"]
    if cell["protocol"] != "loo" or data.gallery is not None:
        raise SystemExit(f"backfill_order.py: scenario protocol {cell['protocol']!r}: written for 'loo' (ext-class's)")
    labels = data.query.labels.cpu()
    bank = FeatureBank.in_memory(features)
    similarity = method.similarity()
    q_old, g_old = method.pair_features(bank.query(1), bank.stored(0), 1, 0)
    q_new, g_new = method.pair_features(bank.query(1), bank.stored(1), 1, 1)
    s_old = similarity(q_old, g_old).double().cpu()
    s_new = similarity(q_new, g_new).double().cpu()
    n = len(labels)
    eye = torch.eye(n, dtype=torch.bool)
    s_old[eye], s_new[eye] = -torch.inf, -torch.inf  # leave-one-out: a query never retrieves itself
    same = labels[:, None] == labels[None, :]
    gap = float(s_new.max(1).values.mean() - s_old.max(1).values.mean())

    orders = refresh_orders(method, bank, data, 0, cell["seed"], ["random", "class-distance"])
    gallery, measures = method.pair_features(bank.query(0), bank.stored(0), 0, 0)[1], (method.similarity(), method.templates())
    own = own_class_similarity(gallery, labels, *measures)
    orders["typical-first"] = torch.sort(-own, stable=True).indices
    orders["balanced-atypical"] = class_balanced_order(gallery, labels, *measures, typical_first=False)
    orders["balanced-typical"] = class_balanced_order(gallery, labels, *measures)  # the option class-balanced

    counts = refresh_counts(n, 10)
    fractions = [c / n for c in counts]
    result: dict = {"gap": gap, "orders": {}}
    for name, order in orders.items():
        curves: dict[str, list[float]] = {"plain": [], "shifted": []}
        at: dict[float, dict[str, float]] = {}
        for count in counts:
            refreshed = torch.zeros(n, dtype=torch.bool)
            refreshed[order[:count]] = True
            mixed = torch.where(refreshed[None, :], s_new, s_old)
            for kind, scores in (("plain", mixed), ("shifted", mixed - gap * refreshed[None, :].double())):
                top = scores.argmax(1)
                curves[kind].append(100.0 * float((labels[top] == labels).double().mean()))
            fraction = count / n
            if any(abs(fraction - f) < 1e-9 for f in FRACTIONS):
                top = mixed.argmax(1)
                hit, won = labels[top] == labels, refreshed[top]
                within = s_new.masked_fill(~refreshed[None, :], -torch.inf)
                covered = (same & refreshed[None, :] & ~eye).any(1)
                at[round(fraction, 2)] = {
                    "cmc@1": 100.0 * float(hit.double().mean()),
                    "top1 refreshed %": 100.0 * float(won.double().mean()),
                    "acc | top1 refreshed": 100.0 * float(hit[won].double().mean()) if won.any() else float("nan"),
                    "acc | top1 old": 100.0 * float(hit[~won].double().mean()) if (~won).any() else float("nan"),
                    "best new-new": float(within.max(1).values.mean()),
                    "best new-old": float(s_old.masked_fill(refreshed[None, :], -torch.inf).max(1).values.mean()),
                    "NN within refreshed": 100.0 * float((labels[within.argmax(1)] == labels).double().mean()),
                    "classes refreshed": float(len(labels[refreshed].unique())),
                    "queries covered %": 100.0 * float(covered.double().mean()),
                    "acc | covered": 100.0 * float(hit[covered].double().mean()) if covered.any() else float("nan"),
                }
        result["orders"][name] = {"curve": curves["plain"], "auc": area_under_curve(fractions, curves["plain"]),
                                  "auc shifted": area_under_curve(fractions, curves["shifted"]), "at": at}
    recorded = cell["recorded"]["pairs"][0]["curves"]["cmc@1"]
    result["matches record"] = all(np.allclose(result["orders"][o]["curve"], recorded[o], atol=1e-9)
                                   for o in recorded)
    return result


def report(name: str, seed: int, result: dict) -> None:
    print(f"\n== {name} seed {seed}: mean best-score gap new-new minus new-old (full galleries) "
          f"{result['gap']:+.3f}; hand-scored curves equal the recorded ones: {result['matches record']}")
    print(f"{'order':<18} {'AUC':>6} {'AUC shifted':>11}  curve (CMC@1, 0..100% refreshed)")
    for order, found in result["orders"].items():
        print(f"{order:<18} {found['auc']:6.1f} {found['auc shifted']:11.1f}  "
              + " ".join(f"{v:.1f}" for v in found["curve"]))
    for fraction in FRACTIONS:
        print(f"-- at {fraction:.0%} refreshed")
        rows = {order: found["at"][fraction] for order, found in result["orders"].items()}
        columns = list(next(iter(rows.values())))
        print(f"{'order':<18} " + " ".join(f"{c:>20}" for c in columns))
        for order, row in rows.items():
            print(f"{order:<18} " + " ".join(f"{row[c]:20.3f}" if "best" in c else f"{row[c]:20.1f}"
                                             for c in columns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="independent,bct")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--scenario", default="ext-class")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--results", type=Path, help="a grid run's results folder to take models from (read only)")
    parser.add_argument("--out", type=Path, required=True, help="where the cells run (a scratch folder)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="as run's --set")
    args = parser.parse_args()
    torch.set_num_threads(1)
    methods, seeds = args.methods.split(","), [int(s) for s in args.seeds.split(",")]
    for cell in run_and_capture(args.scenario, methods, seeds, args.preset, args.out, args.results, args.set):
        report(type(cell["method"]).__name__, cell["seed"], analyse(cell))


if __name__ == "__main__":
    main()
