"""Hyperparameter grids and the rules that choose one of their points on a validation split.

A grid maps hyperparameters of one method to candidate values; its points are the Cartesian
product. Every point is run on the scenario's selection variant (training data minus a per-class
validation split, scored on that split; see ``scenarios.data.validation_sets``), then a rule
declared by the scenario kind picks one point, which is run on the full protocol:

- ``hbct`` (single updates; HBCT Sec. 5, "the best that does not hurt the new model"): the highest
  P_com among the points whose P_up is at least ``-tolerance`` (the reference's own P_up is 0); when
  none qualifies, the point with the highest P_up (the least harm), and the choice says so.
- ``ac-then-aa`` (sequences): the highest AC, ties broken by the highest AA.

Ties go to the earlier point of the grid. Scores are means over the run's seeds.
"""
from __future__ import annotations

import itertools
import math
import statistics
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from benchbackcompat.config import SelectionRule, ValidationSplit
from benchbackcompat.scenarios.kinds import NamedScenario
from benchbackcompat.errors import BenchError
from benchbackcompat.record import CellRecord, FinishedRecord

Grid = dict[str, list[Any]]
DEFAULT_GRID = "default"  # in place of a grid: the one the method declares (``Params.grid``)
# the validation scores each rule reads, in order of precedence
RULE_SCORES: dict[str, tuple[str, ...]] = {"hbct": ("p_com", "p_up"), "ac-then-aa": ("AC", "AA")}


def parse_grid_option(text: str) -> tuple[str, str, list[Any]]:
    """``methods.l2.weight=0.1,1,10`` -> ("l2", "weight", [0.1, 1, 10]); each value is read as TOML, else kept
    as a string."""
    key, sep, raw = text.partition("=")
    path = key.strip().split(".")
    if not sep or len(path) != 3 or path[0] != "methods" or not all(path) or not raw.strip():
        raise BenchError(f"--grid {text!r}: expected methods.NAME.KEY=V1,V2,..., e.g. --grid methods.l2.weight=0.1,1,10")
    return path[1], path[2], [_toml_value(v.strip()) for v in raw.split(",") if v.strip()]


def _toml_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


MAX_POINTS = 10_000  # points of one method's grid: each is a training run per seed


def grid_size(grid: Grid) -> int:
    """The number of points of ``grid``'s Cartesian product, counted without making it; a one-line error for a grid
    that is not a list of values per key, or whose points exceed ``MAX_POINTS``."""
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise BenchError(f"grid {key!r}: expected a non-empty list of values, got {values!r:.60}")
    size = math.prod(len(values) for values in grid.values())
    if size > MAX_POINTS:
        raise BenchError(f"the grid over {', '.join(grid)} has {size:,} points, above the limit of {MAX_POINTS:,}: "
                         "search fewer values")
    return size


def grid_points(grid: Grid) -> list[dict[str, Any]]:
    """The Cartesian product of ``grid`` in its declared order (the last key varies fastest)."""
    grid_size(grid)
    keys = list(grid)
    return [dict(zip(keys, combination)) for combination in itertools.product(*(grid[k] for k in keys))]


def selection_scenario(named: NamedScenario, split: ValidationSplit) -> NamedScenario:
    """The scenario that selection runs: the same protocol on the training data minus ``split``, scored on ``split``."""
    config = named.config.model_copy(update={"data": named.config.data.model_copy(update={"validation": split})})
    return NamedScenario(name=named.name, config=config)


@dataclass(frozen=True)
class Choice:
    index: int  # position of the chosen point in the grid
    note: str  # how it was chosen, for the record and the leaderboard


def choose(rule: SelectionRule, scores: list[dict[str, float | None]], tolerance: float = 0.0) -> Choice | None:
    """Apply ``rule`` to one score dict per grid point (missing or non-finite values rank last); None when no
    point has a score."""
    first, second = RULE_SCORES[rule]

    def value(point: dict[str, float | None], name: str) -> float:
        v = point.get(name)
        return float(v) if v is not None and math.isfinite(v) else -math.inf

    scored = [i for i, s in enumerate(scores) if value(s, first) > -math.inf or value(s, second) > -math.inf]
    if not scored:
        return None
    if rule == "hbct":
        qualifying = [i for i in scored if value(scores[i], "p_up") >= -tolerance]
        if qualifying:
            best = max(qualifying, key=lambda i: (value(scores[i], "p_com"), -i))
            return Choice(best, f"highest P_com among the {len(qualifying)} of {len(scores)} settings whose P_up is at most {tolerance:g} below the reference's")
        best = max(scored, key=lambda i: (value(scores[i], "p_up"), -i))
        return Choice(best, f"every setting has P_up more than {tolerance:g} below the reference's: the highest P_up (least harm to the new model)")
    best = max(scored, key=lambda i: (value(scores[i], first), value(scores[i], second), -i))
    return Choice(best, f"highest {first}, then {second}")


def validation_scores(records: Iterable[CellRecord], rule: SelectionRule, metric: str) -> dict[str, float | None]:
    """The scores ``rule`` reads on ``metric``, averaged over the records (seeds) of one grid point; None where a
    seed has no finite value (diverged, not applicable, not computable)."""
    records = list(records)
    scores: dict[str, float | None] = {}
    for name in RULE_SCORES[rule]:
        values = [r.metrics[metric].statistic(name) if isinstance(r, FinishedRecord) and metric in r.metrics else None
                  for r in records]
        finite = [float(v) for v in values if v is not None and math.isfinite(v)]
        scores[name] = statistics.fmean(finite) if records and len(finite) == len(values) else None
    return scores
