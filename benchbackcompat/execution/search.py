"""A grid search of one (scenario, method) as cells: each setting on the validation split, then the setting
that the scenario kind's rule chooses on the full protocol, with the choice and its cost in its records."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchbackcompat.execution.request import RunConfig
from benchbackcompat.scenarios.kinds import NamedScenario
from benchbackcompat.cell import Cell
from benchbackcompat.errors import BenchError
from benchbackcompat.method import Method
from benchbackcompat.record import CellRecord, FinishedRecord
from benchbackcompat.execution.selection import DEFAULT_GRID, choose, selection_scenario, validation_scores
from benchbackcompat.store import ResultStore


@dataclass
class Search:
    """The grid of one (scenario, method): a selection cell per point and seed on the validation split, then,
    once all are recorded, the chosen point on the full protocol (one cell per seed)."""

    scenario: NamedScenario
    method: str
    grid: dict[str, list[Any]]
    points: list[dict[str, Any]]  # the method's full validated hyperparameters at each grid point
    cells: list[Cell]  # selection cells, point-major, seeds inner
    identity: dict[str, Any]  # grid, rule, metric, tolerance, split, seeds: part of the final cells' keys

    def final_cells(self, store: ResultStore) -> list[Cell] | None:
        """The chosen point's cells, with the choice recorded; None while a selection cell has no record, [] when
        no point has a score."""
        records = [store.record(cell.key) for cell in self.cells]
        if any(r is None for r in records):
            return None
        seeds, rule, metric = self.identity["seeds"], self.identity["rule"], self.identity["metric"]
        per_point = [records[i * len(seeds):(i + 1) * len(seeds)] for i in range(len(self.points))]
        scores = [validation_scores(point, rule, metric) for point in per_point]
        choice = choose(rule, scores, self.identity["tolerance"])
        if choice is None:
            return []
        chosen = self.points[choice.index]
        outcome = {
            "selected": {k: chosen[k] for k in self.grid}, "note": choice.note, "grid_size": len(self.points),
            "points": [{"params": {k: p[k] for k in self.grid}, "validation": s,
                        "status": sorted({r.status for r in rs}), "seconds": sum(_seconds(r) for r in rs)}
                       for p, s, rs in zip(self.points, scores, per_point)],
            "grid_seconds": sum(_seconds(r) for r in records),
        }
        first = self.cells[0]
        return [Cell(self.scenario, self.method, chosen, seed, first.preset, first.code, selection=self.identity,
                     outcome=outcome, point=_point_label(chosen, self.grid)) for seed in seeds]


def _point_label(params: dict[str, Any], grid: dict[str, list[Any]]) -> str:
    return ",".join(f"{k}={params[k]}" for k in grid)


def _seconds(record: CellRecord) -> float:
    return record.compute_seconds if isinstance(record, FinishedRecord) else 0.0


def method_grid(method: Method, grid: dict[str, list[Any]] | str) -> dict[str, list[Any]]:
    """``grid``, or for "default" the grid the method declares in its ``Params`` (the paper's ranges)."""
    if grid != DEFAULT_GRID:
        return grid
    declared = getattr(method.Params, "grid", {})
    if not declared:
        raise BenchError(f"method {method.name!r} declares no default grid; give one with --grid methods.{method.name}.KEY=V1,V2,...")
    return {key: list(values) for key, values in declared.items()}


def make_search(run: RunConfig, named: NamedScenario, method: str, grid: dict[str, list[Any]],
                points: list[dict[str, Any]], code: dict[str, Any]) -> Search:
    split = run.selection.validation
    scenario = selection_scenario(named, split)
    rule = named.config.selection_rule
    seeds = list(dict.fromkeys(run.seeds))
    identity = {"grid": grid, "rule": rule, "metric": named.config.metrics[0], "tolerance": run.selection.tolerance,
                "validation": split.model_dump(mode="json"), "seeds": seeds}
    cells = [Cell(scenario, method, params, seed, run.preset, code, role="selection", point=_point_label(params, grid))
             for params in points for seed in seeds]
    return Search(named, method, grid, points, cells, identity)
