"""The conformance checks every method plugin must pass, on tiny embedded data.

``check_method("my-method")`` runs them all and raises :class:`ConformanceError` listing every
failure; :class:`Conformance` runs them one by one and shares the tiny datasets between methods.

Checks (one :class:`CheckResult` each):

- ``metadata``: a non-empty ``name`` equal to the registered name, a ``description``, a known
  ``standard_steps``;
- ``params``: ``Params`` is a pydantic model whose defaults validate, that rejects unknown keys
  and round-trips through JSON (the cell key hashes it);
- ``scenarios``: ``unsupported_reason`` returns None or a non-empty reason for every scenario
  kind, and at least one kind is supported;
- ``train[<kind>]``: for each chosen supported kind, every step trains with finite loss terms, the
  retrieval features of every model are finite, one row per image, of the declared size
  (``method.feature_size(model)``, by default ``model.feature_dim``), and
  every matrix entry is finite and within [0, 100] (or, off the diagonal, explained by a note);
- ``determinism``: the first chosen kind run again from scratch gives identical loss curves,
  features and matrices.
"""
from __future__ import annotations

import math
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel

from benchbackcompat.config import validate_model
from benchbackcompat.scenarios.kinds import SCENARIO_KINDS, ScenarioBase
from benchbackcompat.engine.evaluate import ModelFeatures, compatibility_matrices
from benchbackcompat.cell import Cell
from benchbackcompat.engine.cell import CellRunner
from benchbackcompat.errors import BenchError
from benchbackcompat.method import Method
from benchbackcompat.models.network import Network
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.scenarios.data import ScenarioData, load_scenario_data
from benchbackcompat.store import ResultStore
from benchbackcompat.testing.scenarios import representative_kinds, tiny_scenario

Kinds = Literal["auto", "all"] | Iterable[str]
UNKNOWN_KEY = "surely_not_a_hyperparameter"


class ConformanceError(AssertionError):
    """A method failed one or more conformance checks (the message lists each failure)."""


@dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str = ""
    seconds: float = 0.0


@dataclass
class ConformanceReport:
    method: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.passed]

    def summary(self) -> str:
        lines = [f"conformance of method {self.method!r}: {'passed' if self.passed else 'FAILED'}"]
        for r in self.results:
            lines.append(f"  {'ok  ' if r.passed else 'FAIL'} {r.name} ({r.seconds:.1f} s){': ' + r.detail if r.detail else ''}")
        return "\n".join(lines)

    def raise_for_failures(self) -> ConformanceReport:
        if not self.passed:
            raise ConformanceError(self.summary())
        return self


@dataclass
class TinyRun:
    """What one tiny scenario left: loss curves, features of every model, matrices."""

    curves: dict[int, list[dict[str, float]]]
    features: list[ModelFeatures]
    matrices: dict[str, list[list[float]]]
    notes: list[str]


class Conformance:
    """Runs the conformance checks; tiny datasets are loaded once and shared between methods."""

    def __init__(self, workdir: Path | None = None, host: PluginHost | None = None, seed: int = 0) -> None:
        # without a workdir: a temporary folder, removed when this object is garbage-collected (or at exit)
        self._tmp = tempfile.TemporaryDirectory(prefix="bbc-conformance-") if workdir is None else None
        self.workdir = Path(workdir) if workdir is not None else Path(self._tmp.name)
        self.host = host or PluginHost()
        self.seed = seed
        self.device = torch.device("cpu")
        self._data: dict[str, ScenarioData] = {}
        self._runs = 0

    # --- entry points ----------------------------------------------------------------------
    def check(self, method: str | type[Method], kinds: Kinds = "auto") -> ConformanceReport:
        """Run every check on ``method`` (a registered name or a Method subclass)."""
        cls = self.host.method_class(method) if isinstance(method, str) else method
        name = method if isinstance(method, str) else cls.name
        report = ConformanceReport(name)
        report.results.append(self._timed("metadata", lambda: check_metadata(cls, name)))
        report.results.append(self._timed("params", lambda: check_params(cls)))
        supported: list[str] = []
        report.results.append(self._timed("scenarios", lambda: supported.extend(check_scenarios(cls))))
        if not report.passed:
            return report
        chosen = self.chosen_kinds(supported, kinds)
        first: TinyRun | None = None
        for kind in chosen:
            runs: list[TinyRun] = []
            report.results.append(self._timed(f"train[{kind}]", lambda: runs.append(self.train_check(cls, kind))))
            first = first or (runs[0] if runs else None)
        if first is not None:
            report.results.append(self._timed(f"determinism[{chosen[0]}]", lambda: self.determinism_check(cls, chosen[0], first)))
        return report

    @staticmethod
    def chosen_kinds(supported: list[str], kinds: Kinds) -> list[str]:
        """``auto``: one representative per scenario family; ``all``: every supported kind."""
        if kinds == "auto":
            return representative_kinds(supported)
        if kinds == "all":
            return list(supported)
        asked = list(kinds)
        unsupported = [k for k in asked if k not in supported]
        if unsupported:
            raise BenchError(f"conformance: kinds {unsupported} are not supported by the method (it supports {supported})")
        return asked

    # --- training checks -------------------------------------------------------------------
    def train_check(self, cls: type[Method], kind: str) -> TinyRun:
        run = self.run_tiny(cls, kind)
        method = cls()
        if "trains" in tiny_scenario(kind).config.traits and method.standard_steps != "all":
            trained = [step for step, curve in run.curves.items() if curve]
            if not trained:
                raise ConformanceError(f"{kind}: no step was trained by the method (every curve is empty)")
        for step, curve in run.curves.items():
            for epoch, values in enumerate(curve):
                if "loss" not in values:
                    raise ConformanceError(f"{kind}: step {step} logged no 'loss' term ({sorted(values)})")
                bad = {k: v for k, v in values.items() if not math.isfinite(v)}
                if bad:
                    raise ConformanceError(f"{kind}: step {step}, epoch {epoch}: non-finite loss terms {bad}")
        check_matrices(kind, run)
        return run

    def determinism_check(self, cls: type[Method], kind: str, first: TinyRun) -> None:
        again = self.run_tiny(cls, kind)
        if again.curves != first.curves:
            raise ConformanceError(f"{kind}: loss curves differ between two runs with the same seed")
        for t, (a, b) in enumerate(zip(first.features, again.features)):
            if not torch.equal(a.query, b.query) or (a.gallery is not None and not torch.equal(a.gallery, b.gallery)):
                raise ConformanceError(f"{kind}: features of model {t} differ between two runs with the same seed")
        if comparable(again.matrices) != comparable(first.matrices):
            raise ConformanceError(f"{kind}: matrices differ between two runs with the same seed")

    def run_tiny(self, cls: type[Method], kind: str) -> TinyRun:
        """Train ``cls`` through the tiny scenario ``kind`` in a fresh store; check the features."""
        named = tiny_scenario(kind)
        scenario = named.config
        data = self.data(scenario)
        method = cls()
        self._runs += 1
        store = ResultStore(self.workdir / f"run-{self._runs}")
        cell = Cell(named, method.name, method.params.model_dump(mode="json"), self.seed, "conformance")
        runner = CellRunner(cell, method, data, store, self.device)
        models, curves, _ = runner.run_steps()
        if len(models) != len(runner.steps):
            raise ConformanceError(f"{kind}: {len(models)} models for {len(runner.steps)} steps")
        features = [runner.features(method, model) for model in models]
        for t, (model, feats) in enumerate(zip(models, features)):
            check_features(method, model, feats, data, f"{kind}: model {t}")
        matrices, notes = compatibility_matrices(method, features, data, scenario.protocol, scenario.metrics,
                                                 self.seed, scenario.verification_pairs)
        return TinyRun(curves, features, matrices, notes)

    def data(self, scenario: ScenarioBase) -> ScenarioData:
        key = scenario.data.model_dump_json() + scenario.protocol + scenario.eval_split
        if key not in self._data:
            self._data[key] = load_scenario_data(scenario, self.workdir / "cache", self.device)
        return self._data[key]

    @staticmethod
    def _timed(name: str, check: Callable[[], Any]) -> CheckResult:
        started = time.perf_counter()
        try:
            check()
        except (ConformanceError, BenchError) as error:
            return CheckResult(name, False, str(error), time.perf_counter() - started)
        except Exception as error:  # a plugin bug: keep the last frames, they point into the plugin
            tail = "".join(traceback.format_exception(error)[-3:]).strip().replace("\n", " | ")
            return CheckResult(name, False, f"{type(error).__name__}: {error} [{tail}]", time.perf_counter() - started)
        return CheckResult(name, True, "", time.perf_counter() - started)


# --- static checks -----------------------------------------------------------------------------
def check_metadata(cls: type[Method], registered: str) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise ConformanceError(f"{cls!r} is not a subclass of benchbackcompat.method.Method")
    if not isinstance(cls.name, str) or not cls.name or cls.name == Method.name:
        raise ConformanceError(f"{cls.__name__}.name must be set to the method's own name, got {cls.name!r}")
    if cls.name != registered:
        raise ConformanceError(f"{cls.__name__}.name is {cls.name!r} but it is registered as {registered!r}")
    if not isinstance(cls.description, str) or not cls.description.strip() or cls.description == Method.description:
        raise ConformanceError(f"{cls.__name__}.description must say in one line what the method does")
    if cls.standard_steps not in ("first", "all", "none"):
        raise ConformanceError(f"{cls.__name__}.standard_steps must be 'first', 'all' or 'none', got {cls.standard_steps!r}")


def check_params(cls: type[Method]) -> None:
    Params = cls.Params
    if not (isinstance(Params, type) and issubclass(Params, BaseModel)):
        raise ConformanceError(f"{cls.__name__}.Params must be a pydantic model (subclass MethodParams)")
    defaults = validate_model(Params, {}, f"default hyperparameters of {cls.name!r}")
    try:
        validate_model(Params, {UNKNOWN_KEY: 1}, f"hyperparameters of {cls.name!r}")
    except BenchError as error:
        if "unknown key" not in str(error):
            raise ConformanceError(f"an unknown key is rejected, but not as an unknown key: {error}") from None
    else:
        raise ConformanceError(f"{cls.__name__}.Params accepts unknown keys; subclass MethodParams (extra='forbid')")
    dumped = defaults.model_dump(mode="json")
    if validate_model(Params, dumped, f"hyperparameters of {cls.name!r}") != defaults:
        raise ConformanceError(f"{cls.__name__}.Params does not round-trip through model_dump(mode='json')")
    method = cls(defaults)
    if not isinstance(method.reference(), Method):
        raise ConformanceError(f"{cls.__name__}.reference() must return a Method instance")


def check_scenarios(cls: type[Method]) -> list[str]:
    """The supported kinds; every other kind must come with a non-empty reason."""
    method = cls()
    supported = []
    for kind in SCENARIO_KINDS:
        reason = method.unsupported_reason(tiny_scenario(kind).config)
        if reason is None:
            supported.append(kind)
        elif not isinstance(reason, str) or not reason.strip():
            raise ConformanceError(f"unsupported_reason({kind!r}) must be None (supported) or a non-empty reason, got {reason!r}")
    if not supported:
        raise ConformanceError("the method supports no scenario kind")
    return supported


# --- features and matrices ---------------------------------------------------------------------
def declared_feature_size(method: Method, model: Network) -> int:
    """``method.feature_size(model)``: by default the network's feature size."""
    return int(method.feature_size(model))


def check_features(method: Method, model: Network, feats: ModelFeatures, data: ScenarioData, where: str) -> None:
    size = declared_feature_size(method, model)
    for name, tensor, images in (("query", feats.query, data.query), ("gallery", feats.gallery, data.gallery)):
        if tensor is None:
            continue
        if tensor.dim() != 2 or tensor.shape[0] != len(images):
            raise ConformanceError(f"{where}: {name} features have shape {tuple(tensor.shape)}, expected ({len(images)}, {size})")
        if tensor.shape[1] != size:
            raise ConformanceError(f"{where}: {name} features have {tensor.shape[1]} dims but the declared size is {size} "
                                   "(define feature_size(model) when the features are not the network's embedding)")
        if not torch.isfinite(tensor).all():
            raise ConformanceError(f"{where}: {name} features are not all finite")


def check_matrices(kind: str, run: TinyRun) -> None:
    for metric, C in run.matrices.items():
        for t in range(len(C)):
            for k in range(t + 1):
                value = C[t][k]
                if value is not None and math.isfinite(value) and 0 <= value <= 100:
                    continue
                explained = k != t and any(note.startswith(f"C[{t}][{k}]") for note in run.notes)
                if not explained:
                    raise ConformanceError(f"{kind}: {metric} C[{t}][{k}] = {value} is not a finite percentage")


def comparable(matrices: dict[str, list[list[float]]]) -> str:
    """A comparable form of matrices that may hold NaN (NaN != NaN)."""
    return repr({m: [[None if v is None or math.isnan(v) else v for v in row] for row in C] for m, C in matrices.items()})


# --- convenience -------------------------------------------------------------------------------
def check_method(method: str | type[Method], *, kinds: Kinds = "auto", workdir: Path | None = None) -> ConformanceReport:
    """Run every conformance check on ``method``; raises :class:`ConformanceError` on any failure."""
    return Conformance(workdir).check(method, kinds).raise_for_failures()


def installed_methods(distribution: str | None = None) -> list[str]:
    """Method names registered as entry points (of ``distribution`` only, when given), without importing them."""
    return sorted(name for name, entry in PluginHost.entry_points().items()
                  if distribution is None or (entry.dist is not None and entry.dist.name == distribution))
