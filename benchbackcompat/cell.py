"""What a cell is: one (scenario, method, seed, configuration), its key and the fields of its record that come from
it alone.

A cell's key is a hash of the resolved configuration (without data paths), the method's code identity, the core's
results version and the data's content fingerprint (``identity``). Naming a cell needs no training code: planning,
executors, workers and search import this module, the engine runs the cell (``engine.cell``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from benchbackcompat.config import config_hash
from benchbackcompat.scenarios.kinds import NamedScenario, ScenarioBase
from benchbackcompat.identity import RESULTS_VERSION
from benchbackcompat.runtime.interrupts import describe, must_propagate

if TYPE_CHECKING:
    from benchbackcompat.method import Method

CELL_FORMAT = 2


@dataclass
class Cell:
    scenario: NamedScenario
    method: str
    params: dict[str, Any]
    seed: int
    preset: str
    code: dict[str, Any] = field(default_factory=dict)  # the method's code identity (identity.code_identity)
    data_fingerprint: str | None = None  # set once the scenario's data is loaded
    training_fingerprint: str | None = None  # its training images' alone (ScenarioData.training_fingerprint)
    data_source: str | None = None  # the dataset's before the seed orders it (recorded, not keyed: seeds share it)
    role: Literal["result", "selection"] = "result"  # selection: a grid point scored on the validation split
    selection: dict[str, Any] | None = None  # how params were chosen (grid, rule, split, seeds): part of the key
    outcome: dict[str, Any] | None = None  # what the choice saw (validation scores, cost): recorded, not keyed
    point: str = ""  # the grid point in words (labels only)

    @property
    def identity(self) -> dict[str, Any]:
        """What the numbers depend on besides the configuration (stored in the record)."""
        return {"code": self.code, "results_version": RESULTS_VERSION, "data_sha256": self.data_fingerprint}

    @property
    def key(self) -> str:
        return self._key(self.scenario.config, self.data_fingerprint)

    @property
    def training_key(self) -> str:
        """What the cell's trained models depend on: its key with the scenario's fields that training never reads at
        their defaults (``ScenarioBase.as_trained``) and the fingerprint of its training images instead of all its
        images. Cells with one training key train alike: each loads the steps another has saved, so a larger test
        set evaluates the models already trained."""
        return self._key(self.scenario.config.as_trained(), self.training_fingerprint)

    def _key(self, scenario: ScenarioBase, data_sha256: str | None) -> str:
        if data_sha256 is None:
            raise RuntimeError(f"cell {self.label}: its key needs the data fingerprint; load the data first")
        return config_hash({
            "format": CELL_FORMAT,
            "scenario": keyed_config(scenario),
            "method": self.method,
            "params": self.params,
            "seed": self.seed,
            **self.identity,
            "data_sha256": data_sha256,
            **({"selection": self.selection} if self.selection is not None else {}),
        })

    @property
    def label(self) -> str:
        point = f"[{'validation ' if self.role == 'selection' else 'selected '}{self.point}]" if self.point else ""
        return f"{self.scenario.name}/{self.method}{point}/seed{self.seed}"


def keyed_config(scenario: ScenarioBase) -> dict[str, Any]:
    """The scenario configuration as it enters keys: without the data root (a path, not the content;
    the data fingerprint stands for the content)."""
    config = scenario.model_dump(mode="json")
    config["data"].pop("root", None)
    return config


def cell_fields(cell: Cell) -> dict[str, Any]:
    """The fields of a record that come from its cell alone."""
    return {
        "key": cell.key, "label": cell.label, "scenario": cell.scenario.name, "kind": cell.scenario.config.kind,
        "preset": cell.preset, "method": cell.method, "seed": cell.seed,
        "config": cell.scenario.config.model_dump(mode="json"), "identity": cell.identity, "role": cell.role,
        **({"selection": {**cell.selection, **(cell.outcome or {})}} if cell.selection is not None else {}),
        **({"data_source": cell.data_source} if cell.data_source else {}),
    }


def unsupported(method: Method, scenario: ScenarioBase) -> str | None:
    """``method.unsupported_reason(scenario)``; a check that raises makes the method unavailable, with the error."""
    try:
        return method.unsupported_reason(scenario)
    except BaseException as error:
        if must_propagate(error):
            raise
        return f"unavailable: its support check raised {describe(error)}"
