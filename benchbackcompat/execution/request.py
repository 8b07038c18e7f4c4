"""What a run is asked to do and what it resolves to, side by side.

:class:`RunRequest`, the run as asked: one typed request that the command line, the Python API, the ``--workers``
processes and the executors' jobs all hand to :func:`benchbackcompat.execution.runner.run`. It holds the choices as
given (scenario and method names, the preset, ``--set`` overrides as dotted keys), and its fields define the run
options. :func:`benchbackcompat.execution.presets.resolve_request` turns it into :class:`RunConfig`, the run as
resolved: the request itself, the preset's scenarios validated, the methods' hyperparameters, the defaults filled
in.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, computed_field, field_validator

from benchbackcompat.config import SEED_MAX, TIMEOUT_MAX, SelectionConfig, StrictModel
from benchbackcompat.scenarios.kinds import NamedScenario

# --smoke: tiny data and one epoch of every model the scenario trains, to check a plugin end to end in seconds
SMOKE_DATA = {"train_per_class": 10, "test_per_class": 4}
SMOKE_TRAIN = {"epochs": 1, "min_steps": 0}
SEEDS = re.compile(r"\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?")


# The Python API's defaults where they are not the command line's: worker processes re-run the calling script's top
# level (spawn), which starts the run again unless the script guards it with ``if __name__ == "__main__":``
API_DEFAULTS = {"workers": 1}

MAX_SEEDS = 1000  # seeds of one run: the papers report 3 to 5; more is a typo (0-100000000 for 0-10), not a plan


def parse_seeds(text: str) -> list[int]:
    """``0,1,2``, ``0-2`` or a mix (``0-2,5``) -> [0, 1, 2(, 5)]; a ValueError naming the bad part otherwise, or the
    number of seeds when it exceeds ``MAX_SEEDS`` (counted before any list is made)."""
    ranges: list[range] = []
    for part in filter(str.strip, text.split(",")):
        match = SEEDS.fullmatch(part)
        if match is None or (match[2] is not None and int(match[2]) < int(match[1])):
            raise ValueError(f"{part.strip()!r} is not a seed or a range: expected integers, e.g. 0,1,2 or 0-2")
        ranges.append(range(int(match[1]), int(match[2] if match[2] is not None else match[1]) + 1))
        if (count := sum(map(len, ranges))) > MAX_SEEDS:
            raise ValueError(f"{text.strip()[:40]!r} asks for {count:,} seeds, above the limit of {MAX_SEEDS:,} per "
                             "run: give fewer seeds (a typo in a range?)")
    seeds = [seed for span in ranges for seed in span]
    if not seeds:
        raise ValueError("no seed given: expected integers, e.g. 0,1,2 or 0-2")
    return seeds


def split_list(text: str | None) -> list[str]:
    """``"a, b,,c"`` -> ["a", "b", "c"]."""
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def option(default: Any = ..., help: str = "", *, flag: str | None = None, metavar: str | None = None,
           **constraints: Any) -> Any:
    """A run option: a :class:`RunRequest` field with its help text and, when the command line spells it otherwise,
    its flag (``--set`` for ``overrides``) and metavar. The command line's options, the Python API's keywords and
    their help are all derived from these fields (``cli.run_options``, ``api.run``)."""
    extra = {key: value for key, value in (("flag", flag), ("metavar", metavar)) if value is not None}
    return Field(default, description=help, json_schema_extra=extra or None, **constraints)


def flag_of(name: str) -> str:
    """The command-line option of :class:`RunRequest` field ``name``: ``--name-with-hyphens``, or the flag it declares."""
    extra = RunRequest.model_fields[name].json_schema_extra or {}
    return extra.get("flag", "--" + name.replace("_", "-"))


class RunRequest(BaseModel):
    """A benchmark run: which cells (scenarios x methods x seeds of a preset), where, and how to execute them.
    Names may be given as lists or comma-separated strings; seeds also as ranges (``"0-2"``). Each field is one
    option of ``benchbackcompat run`` and one keyword of :func:`benchbackcompat.run`, with this help."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenarios: list[str] = option(help="scenarios of the preset (`list scenarios`), comma-separated, or 'all'",
                                  flag="--scenario", metavar="NAME[,NAME]", min_length=1)
    methods: list[str] = option(help="methods (`list methods`), comma-separated, or 'all' (every available method)",
                                metavar="NAME[,NAME]", min_length=1)
    preset: str = option("quick", "preset name (`list presets`) or a TOML file (default: quick)")
    dataset: str | None = option(None, "override data.name of every scenario (`list datasets`)")
    data_root: Path | None = option(None, "folder holding the dataset files or zips", metavar="DIR")
    seeds: list[Annotated[int, Field(ge=0, le=SEED_MAX)]] | None = option(
        None, "seeds, comma-separated or a range (default 0)", metavar="0,1,2|0-2", min_length=1, max_length=MAX_SEEDS)
    out: Path | None = option(None, "results directory (default ./results)", metavar="DIR")
    device: str | None = option(None, "auto (default: CUDA when available), cpu, cuda, cuda:N or mps")
    overrides: dict[str, Any] = option(
        {}, "override a scenario field (train.epochs=2) or a method hyperparameter (methods.l2.weight=3); the value "
            "is read as TOML; repeatable", flag="--set", metavar="KEY=VALUE")
    grids: dict[str, list[Any] | Literal["default"]] = option(
        {}, "search these values of a method hyperparameter (repeatable: the Cartesian product) on a validation split "
            "of the training data, then run the selected setting; methods.NAME alone: the method's own grid",
        flag="--grid", metavar="methods.NAME.KEY=V1,V2")
    smoke: bool = option(False, f"tiny data ({SMOKE_DATA['train_per_class']} training and {SMOKE_DATA['test_per_class']} "
                                "test images per class) and one epoch per model: checks a plugin end to end in seconds "
                                "(results are keyed apart; --set still wins)")
    force: bool = option(False, "recompute every cell of the plan, even finished ones (shared models are keyed by "
                                "their own code and data identity, and reused)")
    rerun: list[str] = option([], "recompute the cells of these methods, even finished ones",
                              metavar="METHOD[,METHOD]")
    share_models: bool = option(True, "train every model inside its own cell (no models shared across methods; for "
                                      "comparisons)", flag="--no-share")
    channels_last: Literal["auto", "on", "off"] | None = option(None, "NHWC training (default auto: on CUDA and CPU)")
    compile: bool = option(False, "torch.compile the backbone for training")
    lock_timeout: PositiveFloat | None = option(
        None, "give up waiting for a cell or model that another process holds (default: wait)", metavar="SECONDS",
        le=TIMEOUT_MAX)
    cell_timeout: PositiveFloat | None = option(
        None, "run each cell in its own process and record it as failed when it takes longer (a hung plugin); the "
              "run goes on with the next cell (default: no limit)", metavar="SECONDS", le=TIMEOUT_MAX)
    dry_run: bool = option(False, "print the resolved configuration and the planned steps, check the data and mark "
                                  "each cell done, partial, stale or pending; train nothing")
    shard: str | None = option(None, "run only shard I of N of the cells (for any scheduler)", metavar="I/N",
                               pattern=r"^\d+/\d+$")
    executor: Literal["inline", "local", "slurm"] = option(
        "inline", "inline (default): here; local/slurm: one submitit job per shard of cells")
    jobs: PositiveInt | None = option(None, "number of jobs for --executor local|slurm (default: one per cell)")
    workers: PositiveInt | Literal["auto"] = option(
        "auto", "run N cells at once on this machine, the CPU threads split among them (default auto: one cell per CPU "
                "thread on a CPU when 2 or more cells train 100,000 images or more, else 1; the Python API's default "
                "is 1)", metavar="N|auto")
    executor_params: dict[str, Any] = option(
        {}, "submitit parameter, e.g. slurm_partition=gpu, timeout_min=600, gpus_per_node=1", flag="--executor-param",
        metavar="KEY=VALUE")

    @field_validator("scenarios", "methods", "rerun", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return split_list(value) if isinstance(value, str) else value

    @field_validator("workers", mode="before")
    @classmethod
    def _workers(cls, value: Any) -> Any:
        """A positive number of workers or ``auto``, in one line (not one error per member of the union)."""
        if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value > 0):
            return value
        raise ValueError(f"expected a positive integer or 'auto', got {value!r}")

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, value: Any) -> Any:
        return parse_seeds(value) if isinstance(value, str) else [value] if isinstance(value, int) else value


class RunConfig(StrictModel):
    """Everything ``benchbackcompat run`` needs, fully resolved: the request as asked (its options are read from it,
    defaults filled in) and what resolving it found (the preset's scenarios with the overrides, the methods'
    hyperparameters and grids, the selection rule). The resolved values of the request's options are properties,
    and part of the dump (``run --dry-run`` prints it)."""

    request: RunRequest = Field(exclude=True)
    scenarios: list[NamedScenario] = Field(min_length=1)
    method_params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    grids: dict[str, dict[str, list[Any]] | Literal["default"]] = Field(
        default_factory=dict,
        description='method -> hyperparameter -> values (the Cartesian product is searched), or "default": the method\'s own grid',
    )
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    cache_dir: Path = Field(default_factory=lambda: Path.home() / ".cache" / "benchbackcompat")

    @computed_field
    @property
    def preset(self) -> str:
        return self.request.preset

    @computed_field
    @property
    def methods(self) -> list[str]:
        return list(self.request.methods)

    @computed_field
    @property
    def seeds(self) -> list[int]:
        return list(self.request.seeds or [0])

    @computed_field
    @property
    def out(self) -> Path:
        return self.request.out or Path("results")

    @computed_field
    @property
    def device(self) -> str:
        return self.request.device or "auto"

    @computed_field
    @property
    def share_models(self) -> bool:
        """Train models that do not depend on the method once per configuration."""
        return self.request.share_models

    @computed_field
    @property
    def channels_last(self) -> Literal["auto", "on", "off"]:
        """NHWC training; auto: on CUDA and CPU."""
        return self.request.channels_last or "auto"

    @computed_field
    @property
    def compile(self) -> bool:
        return self.request.compile

    @computed_field
    @property
    def lock_timeout(self) -> float | None:
        """Seconds to wait for another process's cell or model lock (None: wait)."""
        return self.request.lock_timeout

    @computed_field
    @property
    def cell_timeout(self) -> float | None:
        """Seconds a cell may take (in its own process), then it fails (None: no limit)."""
        return self.request.cell_timeout
