"""What a run is asked to do: one typed request that the command line, the Python API, the ``--workers``
processes and the executors' jobs all hand to :func:`benchbackcompat.execution.runner.run`.

A request holds the choices as given (scenario and method names, the preset, ``--set`` overrides as
dotted keys); :func:`benchbackcompat.execution.presets.resolve_run` turns it into the validated ``RunConfig``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, field_validator

from benchbackcompat.config import TIMEOUT_MAX

# --smoke: tiny data and one epoch of every model the scenario trains, to check a plugin end to end in seconds
SMOKE_DATA = {"train_per_class": 10, "test_per_class": 4}
SMOKE_TRAIN = {"epochs": 1, "min_steps": 0}
SEEDS = re.compile(r"\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?")


def parse_seeds(text: str) -> list[int]:
    """``0,1,2``, ``0-2`` or a mix (``0-2,5``) -> [0, 1, 2(, 5)]; a ValueError naming the bad part otherwise."""
    seeds: list[int] = []
    for part in filter(str.strip, text.split(",")):
        match = SEEDS.fullmatch(part)
        if match is None or (match[2] is not None and int(match[2]) < int(match[1])):
            raise ValueError(f"{part.strip()!r} is not a seed or a range: expected integers, e.g. 0,1,2 or 0-2")
        first, last = int(match[1]), int(match[2] if match[2] is not None else match[1])
        seeds += range(first, last + 1)
    if not seeds:
        raise ValueError("no seed given: expected integers, e.g. 0,1,2 or 0-2")
    return seeds


def split_list(text: str | None) -> list[str]:
    """``"a, b,,c"`` -> ["a", "b", "c"]."""
    return [item.strip() for item in (text or "").split(",") if item.strip()]


class RunRequest(BaseModel):
    """A benchmark run: which cells (scenarios x methods x seeds of a preset), where, and how to execute them.
    Names may be given as lists or comma-separated strings; seeds also as ranges (``"0-2"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenarios: list[str] = Field(min_length=1, description="scenario names of the preset, or ['all']")
    methods: list[str] = Field(min_length=1, description="method names (`benchbackcompat list methods`)")
    preset: str = Field("quick", description="preset name (`list presets`) or a TOML file")
    dataset: str | None = Field(None, description="overrides data.name of every scenario")
    data_root: Path | None = Field(None, description="folder holding the dataset files or zips")
    seeds: list[int] | None = Field(None, min_length=1, description="None: the preset's (0)")
    out: Path | None = Field(None, description="results directory (None: ./results)")
    device: str | None = Field(None, description="auto (default), cpu, cuda, cuda:1, mps")
    overrides: dict[str, Any] = Field(default_factory=dict,
                                      description="dotted key -> value: train.epochs, methods.l2.weight, selection.x")
    grids: dict[str, list[Any] | Literal["default"]] = Field(
        default_factory=dict, description='methods.NAME.KEY -> values to search; methods.NAME -> "default" (its own grid)')
    smoke: bool = Field(False, description="tiny data and one epoch: checks a plugin end to end in seconds")
    force: bool = Field(False, description="recompute every cell, even finished ones")
    rerun: list[str] = Field(default_factory=list, description="methods whose cells are recomputed")
    share_models: bool = Field(True, description="False: every cell trains its own models (no shared old models)")
    channels_last: Literal["auto", "on", "off"] | None = None
    compile: bool = False
    lock_timeout: PositiveFloat | None = Field(None, le=TIMEOUT_MAX, description="seconds to wait for a lock another process holds")
    cell_timeout: PositiveFloat | None = Field(None, le=TIMEOUT_MAX, description="seconds a cell may take; then it fails, the run goes on")
    dry_run: bool = Field(False, description="plan, check the data and mark each cell; train nothing")
    shard: str | None = Field(None, pattern=r"^\d+/\d+$", description="I/N: only every N-th cell from the I-th")
    executor: Literal["inline", "local", "slurm"] = "inline"
    jobs: PositiveInt | None = Field(None, description="jobs for executor local|slurm (None: one per cell)")
    workers: PositiveInt = Field(1, description="cells at once on this machine, in processes")
    executor_params: dict[str, Any] = Field(default_factory=dict, description="submitit parameters")

    @field_validator("scenarios", "methods", "rerun", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return split_list(value) if isinstance(value, str) else value

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, value: Any) -> Any:
        return parse_seeds(value) if isinstance(value, str) else [value] if isinstance(value, int) else value
