"""The record of a cell: what ``record.json`` holds, as typed models.

A record is one of four outcomes, told apart by ``status``: ``finished`` (metrics, matrices, timings),
``diverged`` (where the loss stopped being finite), ``not-applicable`` (the method does not support the
scenario) and ``failed`` (an error; returned to the run, never stored). Every record carries the cell's
identity (key, label, scenario, method, seed, configuration) and its provenance (versions, device,
code and data identity, when it was computed). The JSON layout is flat, as the first records were
written; fields this model does not name pass through unchanged. A finished cell's training curves are not part
of its record: the store keeps them beside it, in ``curves.json.gz`` (``ResultStore.curves``).

A finished record's numbers are checked for shape and range, so that a record with a valid checksum but a
ragged matrix is refused as malformed rather than crashing a reader: every matrix is T x T (one T per record,
that of its steps), only its lower triangle (query model t, gallery model k <= t) holds values, which are
accuracies in [0, 100] (null where not computable); AC and its curve are fractions in [0, 1]; the per-query
outcomes and the update gains are T x T too. The live-upgrade blocks are checked as strictly, through typed models
(:class:`Backfill`, :class:`IndexScores`): a backfilling curve per consecutive update k -> k + 1 of the record's models,
from 0% to 100% refreshed, of accuracies in [0, 100] with its area in the same range, and index matrices shaped
like the record's. Stored flip rates are never read (:data:`FLIP_RATES`): they are recomputed from the outcomes.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

Number = float | None
Matrix = list[list[Number]]

__all__ = ["CellRecord", "DivergedRecord", "FailedRecord", "FinishedRecord", "MetricSummary", "NotApplicableRecord",
           "RecordBase", "ValidationError", "Versions", "parse_record"]


PERCENT_STATISTICS = ("AA", "ACA", "self", "cross", "old_self", "reference_self")  # accuracies in %
FLIP_RATES = ("nfr_cross", "pfr_cross", "nfr_self", "pfr_self", "nfr_first", "pfr_first")  # ``metrics.flips``' KEYS
# and FIRST_KEYS: derived, never stored
NAME = r"^[a-z0-9][a-z0-9_@.-]{0,63}$"  # a metric, refresh order or index kind, as the engine names them


def _check_range(value: Any, where: str, low: float, high: float) -> None:
    """Refuse a number outside [low, high] (None and NaN mean "not computable" and pass)."""
    if value is not None and not math.isnan(value) and not low <= value <= high + 1e-9:
        raise PydanticCustomError("out_of_range", f"{where} = {value} is outside [{low:g}, {high:g}]")


def _check_lower_triangle(C: list[list[Any]], where: str) -> None:
    """A T x T matrix of accuracies in [0, 100] whose values lie in the lower triangle (k <= t) only."""
    _check_square(C, where)
    for t, row in enumerate(C):
        for k, value in enumerate(row):
            if k > t and value is not None and not math.isnan(value):
                raise PydanticCustomError("matrix_triangle", f"{where}[{t}][{k}] = {value}: only the lower "
                                          "triangle (gallery model k <= query model t) holds values")
            _check_range(value, f"{where}[{t}][{k}]", 0.0, 100.0)


def _check_square(rows: list[list[Any]], where: str) -> int:
    """T, for a non-empty T x T list of rows; refuses any other shape."""
    if not rows:
        raise PydanticCustomError("matrix_shape", f"{where} is empty; a matrix has one row per model")
    for t, row in enumerate(rows):
        if len(row) != len(rows):
            raise PydanticCustomError("matrix_shape", f"{where} row {t} has {len(row)} entries; a matrix of "
                                                      f"{len(rows)} models is {len(rows)} x {len(rows)}")
    return len(rows)


class Versions(BaseModel):
    """The software that computed a record (``commit``: the project's git commit, ``+dirty`` when modified)."""

    model_config = ConfigDict(extra="allow")
    benchbackcompat: str | None = None
    commit: str | None = None
    python: str | None = None
    torch: str | None = None
    torchvision: str | None = None
    timm: str | None = None
    plugins: dict[str, str] = {}


class MetricSummary(BaseModel):
    """The statistics of one retrieval metric's compatibility matrix (``metrics.summary.summarise``), in %:
    AA/AC/ACA and their curves over tau for sequences, self/cross/old_self and the reference-based
    P_com/P_up/update gain for one update. None: not computable (or not defined for this kind)."""

    model_config = ConfigDict(extra="allow")
    AA: Number = None
    AC: Number = None
    ACA: Number = None
    AA_curve: list[Number] | None = None
    AC_curve: list[Number] | None = None
    self: Number = None
    cross: Number = None
    old_self: Number = None
    reference_self: Number = None
    p_com: Number = None
    p_up: Number = None
    update_gain: Number = None

    @model_validator(mode="after")
    def _in_range(self) -> MetricSummary:
        for name in PERCENT_STATISTICS:
            _check_range(getattr(self, name), name, 0.0, 100.0)
        _check_range(self.AC, "AC", 0.0, 1.0)
        for i, value in enumerate(self.AA_curve or []):
            _check_range(value, f"AA_curve[{i}]", 0.0, 100.0)
        for i, value in enumerate(self.AC_curve or []):
            _check_range(value, f"AC_curve[{i}]", 0.0, 1.0)
        return self

    def statistic(self, name: str) -> Number:
        """A scalar statistic by name (a column of the leaderboard); None when absent or a curve."""
        value = getattr(self, name, None)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def scalars(self) -> dict[str, Number]:
        """Every scalar statistic the record stored, by name, in stored order; flip rates a record stores are left
        out: they are recomputed from the per-query outcomes (``metrics.flips``), never read."""
        return {k: v for k, v in self.model_dump(exclude_unset=True).items()
                if (v is None or isinstance(v, (int, float))) and k not in FLIP_RATES}


Name = Annotated[str, Field(pattern=NAME)]


class Permutation(BaseModel):
    """One further random permutation of the refresh: its curve (%), area (%) and per-step outcomes."""

    model_config = ConfigDict(extra="forbid")
    curve: list[Number]
    auc: Number
    outcomes: list[dict[str, Any]] = []


class BackfillPair(BaseModel):
    """The backfilling curves of one update old -> new = old + 1: per metric and refresh order, the accuracy (%) at
    each refreshed fraction (0 first, 1 last, increasing) and the area under the curve (%). Records written since
    the per-step outcomes exist also hold, per metric, the encoded per-query outcomes of every step of every order
    (``outcomes``; ``metrics.outcomes``), those of the old self-test C[old][old] the flips along the curve are counted
    against (``old_self``), and the random order's further permutations (``permutations``; the first is
    ``curves[metric]["random"]``); older records hold none of them."""

    model_config = ConfigDict(extra="forbid")
    old: int = Field(ge=0)
    new: int = Field(ge=1)
    fractions: list[float] = Field(min_length=2)
    curves: dict[Name, dict[Name, list[Number]]]
    auc: dict[Name, dict[Name, Number]]
    outcomes: dict[Name, dict[Name, list[dict[str, Any]]]] = {}
    old_self: dict[Name, dict[str, Any]] = {}
    permutations: dict[Name, list[Permutation]] = {}

    @model_validator(mode="after")
    def _consistent(self) -> BackfillPair:
        where = f"backfill {self.old} -> {self.new}"
        if self.new != self.old + 1:
            raise PydanticCustomError("backfill_pair", f"{where}: curves are of consecutive updates (new = old + 1)")
        x = self.fractions
        if x[0] != 0 or x[-1] != 1 or any(b <= a for a, b in zip(x, x[1:])):
            raise PydanticCustomError("backfill_fractions", f"{where}: fractions must rise from 0 to 1, got "
                                                            f"{x[0]:g} .. {x[-1]:g}")
        if {m: set(o) for m, o in self.curves.items()} != {m: set(o) for m, o in self.auc.items()}:
            raise PydanticCustomError("backfill_orders", f"{where}: the areas are not of the curves' metrics and orders")
        for metric, by_order in self.curves.items():
            for order, curve in by_order.items():
                if len(curve) != len(x):
                    raise PydanticCustomError("backfill_curve", f"{where}: curve {metric}/{order} has {len(curve)} "
                                                                f"points for {len(x)} fractions")
                for i, value in enumerate(curve):
                    _check_range(value, f"{where}: {metric}/{order}[{i}]", 0.0, 100.0)
                _check_range(self.auc[metric][order], f"{where}: area {metric}/{order}", 0.0, 100.0)
        for metric, by_order in self.outcomes.items():
            for order, steps in by_order.items():
                if order not in self.curves.get(metric, {}) or len(steps) != len(x):
                    raise PydanticCustomError("backfill_outcomes", f"{where}: outcomes {metric}/{order} are not one "
                                                                   "per point of a stored curve")
        for metric, drawn in self.permutations.items():
            for i, permutation in enumerate(drawn):
                if len(permutation.curve) != len(x) or permutation.outcomes and len(permutation.outcomes) != len(x):
                    raise PydanticCustomError("backfill_permutation", f"{where}: permutation {metric}[{i}] is not one "
                                                                      "point per fraction")
                for value in [*permutation.curve, permutation.auc]:
                    _check_range(value, f"{where}: permutation {metric}[{i}]", 0.0, 100.0)
        return self


class Backfill(BaseModel):
    """``FinishedRecord.backfill``: one :class:`BackfillPair` per consecutive update, in order."""

    model_config = ConfigDict(extra="forbid")
    pairs: list[BackfillPair]

    @model_validator(mode="after")
    def _in_order(self) -> Backfill:
        if [pair.old for pair in self.pairs] != list(range(len(self.pairs))):
            raise PydanticCustomError("backfill_pairs", "backfill: one pair per consecutive update 0 -> 1, 1 -> 2, ...")
        return self


class IndexScores(BaseModel):
    """``FinishedRecord.index``: the IVF-PQ sizes used and, per index kind and metric, a T x T matrix of accuracies
    (%) through the index, in the lower triangle."""

    model_config = ConfigDict(extra="forbid")
    sizes: dict[Name, Annotated[int, Field(ge=1)]] = {}
    matrices: dict[Name, dict[Name, Matrix]]

    @model_validator(mode="after")
    def _lower_triangles(self) -> IndexScores:
        for kind, by_metric in self.matrices.items():
            for metric, C in by_metric.items():
                _check_lower_triangle(C, f"index.{kind}.{metric}")
        return self


class RecordBase(BaseModel):
    """What every record carries: the cell and its provenance."""

    model_config = ConfigDict(extra="allow")
    key: str
    label: str
    scenario: str
    kind: str
    method: str
    seed: int
    preset: str | None = None
    dataset: str | None = None
    params: dict[str, Any] = {}
    config: dict[str, Any] = {}
    role: Literal["result", "selection"] = "result"
    selection: dict[str, Any] | None = None  # how the parameters were chosen and what the choice saw
    device: str | None = None
    worker: str | None = None  # host:pid of the process that computed it
    versions: Versions = Versions()
    identity: dict[str, Any] = {}  # code, results version, data fingerprint (the parts of the key besides the config)
    data_source: str | None = None  # the dataset's fingerprint before a seed orders it: seeds of one table share it
    computed_at: str | None = None
    source: str | None = Field(default=None, exclude=True)  # the results directory it was read from (not stored)

    @property
    def finished(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        """The record as ``record.json`` holds it (the fields that were set, flat)."""
        return self.model_dump(mode="python", exclude_unset=True)


class FinishedRecord(RecordBase):
    status: Literal["finished"]
    steps: list[dict[str, Any]] = []
    metrics: dict[str, MetricSummary] = {}
    matrices: dict[str, Matrix] = {}
    outcomes: dict[str, dict[str, Any]] = {}  # per-query hits/precisions behind each entry (bootstrap intervals)
    chance: dict[str, Number] = {}
    update_gain: dict[str, Matrix] | None = None  # G[t][k] for sequences that declare it
    backfill: dict[str, Any] | None = None  # backfilling curves per consecutive update (scenario.backfill): Backfill
    index: dict[str, Any] | None = None  # CMC@k matrices through a FAISS index, per index kind (scenario.index): IndexScores
    notes: list[str] = []
    shared_models: list[str] = []
    timings: dict[str, Any] = {}

    @property
    def finished(self) -> bool:
        return True

    @field_validator("matrices")
    @classmethod
    def _lower_triangles_of_accuracies(cls, matrices: dict[str, Matrix]) -> dict[str, Matrix]:
        for metric, C in matrices.items():
            _check_lower_triangle(C, metric)
        return matrices

    @field_validator("backfill")
    @classmethod
    def _backfill(cls, backfill: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if backfill is None else Backfill.model_validate(backfill).model_dump(exclude_unset=True)

    @field_validator("index")
    @classmethod
    def _index(cls, index: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if index is None else IndexScores.model_validate(index).model_dump()

    @field_validator("chance")
    @classmethod
    def _chance_in_range(cls, chance: dict[str, Number]) -> dict[str, Number]:
        for metric, value in chance.items():
            _check_range(value, metric, 0.0, 100.0)
        return chance

    @model_validator(mode="after")
    def _one_size(self) -> FinishedRecord:
        """Every matrix, per-query outcome table, update-gain matrix and curve has the record's one size T."""
        sizes = {f"matrices.{m}": len(C) for m, C in self.matrices.items()}
        if self.steps:
            sizes["steps"] = len(self.steps)
        for metric, G in (self.update_gain or {}).items():
            sizes[f"update_gain.{metric}"] = _check_square(G, f"update_gain.{metric}")
        for metric, stored in self.outcomes.items():
            entries = stored.get("C") if isinstance(stored, dict) else None
            if entries is not None:
                if not isinstance(entries, list) or not all(isinstance(row, list) for row in entries):
                    raise PydanticCustomError("outcomes_shape", f"outcomes.{metric}.C must be a T x T list of lists")
                sizes[f"outcomes.{metric}.C"] = _check_square(entries, f"outcomes.{metric}.C")
        if self.backfill is not None:  # one pair per consecutive update
            sizes["backfill.pairs + 1"] = len(self.backfill["pairs"]) + 1
        for kind, by_metric in ((self.index or {}).get("matrices") or {}).items():
            for metric, C in by_metric.items():
                sizes[f"index.{kind}.{metric}"] = len(C)
        for metric, summary in self.metrics.items():
            for curve in ("AA_curve", "AC_curve"):
                if getattr(summary, curve) is not None:
                    sizes[f"metrics.{metric}.{curve}"] = len(getattr(summary, curve))
        if len(set(sizes.values())) > 1:
            found = ", ".join(f"{where}: {size}" for where, size in sizes.items())
            raise PydanticCustomError("record_size", f"the record's models disagree in number ({found})")
        return self

    @property
    def compute_seconds(self) -> float:
        """The compute the cell recorded: its steps (resumed ones as recorded when trained), the shared models it
        trained or loaded, and its evaluation; unlike ``timings["total_s"]``, not cut short by a resume."""
        return float(self.timings.get("train_s", 0.0)) + float(self.timings.get("eval_s", 0.0))


class DivergedRecord(RecordBase):
    status: Literal["diverged"]
    reason: str
    step: int | None = None
    epoch: int | None = None
    batch: int | None = None
    last_finite_loss: Number = None


class NotApplicableRecord(RecordBase):
    status: Literal["not-applicable"]
    reason: str


class FailedRecord(RecordBase):
    status: Literal["failed"]
    reason: str
    traceback: str | None = None  # path of the saved traceback


CellRecord = Annotated[FinishedRecord | DivergedRecord | NotApplicableRecord | FailedRecord, Field(discriminator="status")]
_ADAPTER: TypeAdapter[CellRecord] = TypeAdapter(CellRecord)


def parse_record(data: Any) -> CellRecord:
    """A record from its JSON form; raises pydantic's ``ValidationError`` naming the first bad field."""
    if isinstance(data, RecordBase):
        return data
    return _ADAPTER.validate_python(data)
