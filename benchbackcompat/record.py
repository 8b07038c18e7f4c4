"""The record of a cell: what ``record.json`` holds, as typed models.

A record is one of four outcomes, told apart by ``status``: ``finished`` (metrics, matrices, timings),
``diverged`` (where the loss stopped being finite), ``not-applicable`` (the method does not support the
scenario) and ``failed`` (an error; returned to the run, never stored). Every record carries the cell's
identity (key, label, scenario, method, seed, configuration) and its provenance (versions, device,
code and data identity, when it was computed). The JSON layout is flat, as the first records were
written; fields this model does not name pass through unchanged. A finished cell's training curves are not part
of its record: the store keeps them beside it, in ``curves.json`` (``ResultStore.curves``).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

Number = float | None
Matrix = list[list[Number]]

__all__ = ["CellRecord", "DivergedRecord", "FailedRecord", "FinishedRecord", "MetricSummary", "NotApplicableRecord",
           "RecordBase", "ValidationError", "Versions", "parse_record"]


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

    def statistic(self, name: str) -> Number:
        """A scalar statistic by name (a column of the leaderboard); None when absent or a curve."""
        value = getattr(self, name, None)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def scalars(self) -> dict[str, Number]:
        """Every scalar statistic the record stored, by name, in stored order."""
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if v is None or isinstance(v, (int, float))}


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
    notes: list[str] = []
    shared_models: list[str] = []
    timings: dict[str, Any] = {}

    @property
    def finished(self) -> bool:
        return True

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
