"""Scenario preset files (TOML) and the resolution of a run configuration.

A preset file has an optional ``[defaults]`` table merged into every scenario (its ``train`` table also
into the ``pretrain`` table of a scenario with models pretrained elsewhere), one table per
scenario under ``[scenarios.<name>]`` (with its ``kind``), and method hyperparameters under
``[methods.<name>]``, hyperparameter grids under ``[grids.<method>]`` (``key = [values]``) and the
validation split and tolerance of selection under ``[selection]``. Command-line values are applied last.
"""
from __future__ import annotations

import os
import re
import tomllib
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from collections.abc import Iterable, Mapping
from typing import Any

from benchbackcompat.config import validate_model
from benchbackcompat.execution.request import RunConfig, RunRequest
from benchbackcompat.scenarios.kinds import NamedScenario
from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.overrides import MAX_DEPTH, depth, nested, parse_override
from benchbackcompat.execution.request import SMOKE_DATA, SMOKE_TRAIN
from benchbackcompat.execution.selection import DEFAULT_GRID, parse_grid_option

PRESET_ENV = "BENCHBACKCOMPAT_PRESETS"
# The repository's top-level presets/, shipped in the wheel as package data (benchbackcompat/preset_files is a
# link to it in the checkout; build copies the files).
BUILTIN_PRESETS = files("benchbackcompat") / "preset_files"
SCENARIO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # names become folder names (TensorBoard runs)


def preset_dirs() -> list[Traversable]:
    """Where named presets are looked up: ``$BENCHBACKCOMPAT_PRESETS`` (colon-separated), then the built-in presets."""
    extra = [Path(p) for p in os.environ.get(PRESET_ENV, "").split(os.pathsep) if p]
    return [*extra, BUILTIN_PRESETS]


def available_presets() -> dict[str, Traversable]:
    found: dict[str, Traversable] = {}
    for directory in reversed(preset_dirs()):
        if directory.is_dir():
            tomls = sorted((p for p in directory.iterdir() if p.name.endswith(".toml")), key=lambda p: p.name)
            found.update({p.name.removesuffix(".toml"): p for p in tomls})
    return found


def preset_path(preset: str) -> Traversable:
    """A preset name (``quick``) or a path to a TOML file."""
    if preset.endswith(".toml") or os.sep in preset:
        path = Path(preset)
        if not path.is_file():
            raise BenchError(f"preset file {path} does not exist")
        return path
    presets = available_presets()
    if preset not in presets:
        raise UnknownNameError("preset", preset, presets)
    return presets[preset]


def load_preset(preset: str) -> dict[str, Any]:
    path = preset_path(preset)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise BenchError(f"malformed preset {path}: {error}; fix the TOML (https://toml.io)") from None
    except RecursionError:
        data = {"": nested(["x"] * (MAX_DEPTH + 1), 0)}
    except OSError as error:
        raise BenchError(f"cannot read preset {path}: {error.strerror or error}") from None
    if depth(data) > MAX_DEPTH:
        raise BenchError(f"preset {path}: tables or arrays nested more than {MAX_DEPTH} deep; presets need 3 levels")
    allowed = ("description", "defaults", "scenarios", "methods", "grids", "selection")
    unknown = set(data) - set(allowed)
    if unknown:
        raise BenchError(f"preset {path}: unknown top-level keys {sorted(unknown)}; allowed: {', '.join(allowed)}")
    if not data.get("scenarios"):
        raise BenchError(f"preset {path} defines no [scenarios.<name>] table")
    for key, what in (("defaults", "[defaults] table"), ("scenarios", "[scenarios.<name>] tables"), ("methods", "[methods.<name>] tables"),
                      ("grids", '[grids.<method>] tables (or <method> = "default")'), ("selection", "[selection] table")):
        value = data.get(key, {})
        entries = value.values() if isinstance(value, dict) and key not in ("defaults", "selection") else []
        if not isinstance(value, dict) or not all(isinstance(v, dict) or (key == "grids" and v == DEFAULT_GRID) for v in entries):
            raise BenchError(f"preset {path}: {key} must be {what}, got {value!r:.60}")
    for name in data["scenarios"]:
        if not SCENARIO_NAME.fullmatch(name):
            raise BenchError(f"preset {path}: scenario name {name!r:.70} must be 1-64 letters, digits, '_', '.' or '-', "
                             "starting with a letter or digit (it becomes a folder name)")
    return data


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge; ``override`` wins, tables merge key by key."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def checked_path(key: str, value: Any) -> list[str]:
    """The dotted ``key`` as a path, refused when the path and the value nest deeper than presets may."""
    path = key.split(".")
    if len(path) + depth(value) > MAX_DEPTH:
        raise BenchError(f"--set {key}={str(value):.60}: nested more than {MAX_DEPTH} deep; a value needs at most 3 levels")
    return path


def check_metrics(scenario: str, protocol: str, metrics: list[str]) -> None:
    """Fail before any training when a metric is not defined for the scenario's protocol."""
    from benchbackcompat.metrics.protocols import metrics_of  # torch: imported when a run is resolved, not to list

    defined = metrics_of(protocol)
    if undefined := [m for m in metrics if m not in defined]:
        raise BenchError(f"scenario {scenario!r}: metric {', '.join(map(repr, undefined))} is not defined for protocol "
                         f"{protocol!r}; set metrics to some of {', '.join(defined)} (e.g. --set metrics=[\"{defined[0]}\"])")


def smoke_table(table: dict[str, Any]) -> dict[str, Any]:
    """What ``--smoke`` sets in a scenario table: tiny data, one epoch of each training it declares."""
    trainings = [key for key in ("pretrain", "new_train") if isinstance(table.get(key), dict)]
    if table.get("kind") == "iam-cl2r":
        trainings.append("pretrain")
    return {"data": SMOKE_DATA, "train": SMOKE_TRAIN, **{key: SMOKE_TRAIN for key in trainings}}


def resolve_scenarios(
    preset: str, data: dict[str, Any], names: list[str], overrides: dict[str, Any], smoke: bool = False
) -> list[tuple[NamedScenario, dict[str, Any]]]:
    """The named scenarios of a loaded preset, each as (validated scenario, its table: defaults < preset < smoke
    < overrides)."""
    known = data["scenarios"]
    if (unknown := next((name for name in names if name not in known), None)) is not None:  # names before values
        raise UnknownNameError(f"scenario (preset {preset!r})", unknown, known)
    resolved = []
    defaults = data.get("defaults", {})
    for name in names:
        table = deep_merge(defaults, known[name])
        table = deep_merge(deep_merge(table, smoke_table(table)) if smoke else table, overrides)
        where = f"preset {preset!r}, scenario {name!r}"
        scenario = validate_model(NamedScenario, {"name": name, "config": table}, where)
        if scenario.config.pretrains_elsewhere() and "train" in defaults:  # models pretrained elsewhere: the preset's
            table["pretrain"] = deep_merge(defaults["train"], table.get("pretrain", {}))  # training defaults (amp, ...)
            scenario = validate_model(NamedScenario, {"name": name, "config": table}, where)
        check_metrics(name, scenario.config.protocol, scenario.config.metrics)
        if scenario.config.index is not None:  # fail before any training when its backend is missing
            from benchbackcompat.metrics.index import require_faiss
            from benchbackcompat.metrics.milvus import require_client

            if scenario.config.index.backend == "milvus":
                require_client()
            else:
                require_faiss()
        resolved.append((scenario, table))
    return resolved


def preset_scenarios(preset: str) -> list[NamedScenario]:
    """Every scenario a preset defines, resolved and validated as ``resolve_run`` does (no command-line overrides)."""
    data = load_preset(preset)
    return [scenario for scenario, _ in resolve_scenarios(preset, data, list(data["scenarios"]), {})]


def resolve_run(
    *,
    preset: str = "quick",
    scenarios: list[str],
    methods: list[str],
    seeds: list[int] | None = None,
    scenario_overrides: dict[str, Any] | None = None,
    assignments: Iterable[str] | Mapping[str, Any] = (),
    grids: Iterable[str] | Mapping[str, list[Any] | str] = (),
    out: Path | None = None,
    device: str | None = None,
    cache_dir: Path | None = None,
    smoke: bool = False,
) -> RunConfig:
    """:func:`resolve_request` of the request these options make, for scripts and checks that write ``--set`` and
    ``--grid`` as on the command line: ``assignments`` are ``--set KEY=VALUE`` options (or a mapping of dotted keys
    to values), ``grids`` ``--grid methods.NAME.KEY=V1,V2`` options (or a mapping ``methods.NAME.KEY -> values``),
    ``scenario_overrides`` a table merged into every scenario before them."""
    pairs = assignments.items() if isinstance(assignments, Mapping) else map(parse_override, assignments)
    fields = {"preset": preset, "scenarios": scenarios, "methods": methods, "seeds": seeds, "out": out,
              "device": device, "smoke": smoke, "overrides": dict(pairs),
              "grids": {option.split("=")[0]: values for option, _, _, values in grid_options(grids)}}
    request = validate_model(RunRequest, {key: value for key, value in fields.items() if value is not None},
                             "the run configuration")
    return resolve_request(request, cache_dir=cache_dir, scenario_overrides=scenario_overrides)


def resolve_request(request: RunRequest, *, cache_dir: Path | None = None,
                    scenario_overrides: dict[str, Any] | None = None) -> RunConfig:
    """The run configuration of ``request``: defaults < preset < (``smoke``) < the request's values (its dataset and
    data root, then its ``--set`` overrides). Fails with one line on any bad value.

    Each ``--grid`` replaces the preset's values of that key; ``methods.NAME`` alone searches the default grid that
    the method declares (its ``Params.grid``)."""
    data = load_preset(request.preset)
    known = data["scenarios"]
    scenarios, methods = list(known) if request.scenarios == ["all"] else request.scenarios, request.methods
    overrides = dict(scenario_overrides or {})
    chosen = {key: value for key, value in (("name", request.dataset),
                                            ("root", request.data_root and str(request.data_root))) if value}
    if chosen:
        overrides = deep_merge(overrides, {"data": chosen})
    method_params: dict[str, dict[str, Any]] = {k: dict(v) for k, v in data.get("methods", {}).items()}
    grid_tables: dict[str, Any] = {k: v if v == DEFAULT_GRID else dict(v) for k, v in data.get("grids", {}).items()}
    for option, method, key, values in grid_options(request.grids):
        if method not in methods:
            raise BenchError(f"--grid {option:.80}: method {method!r} is not among --methods ({', '.join(methods)}); "
                             "add it to --methods or fix the name")
        if key is None:
            grid_tables[method] = values
            continue
        if grid_tables.get(method) == DEFAULT_GRID:
            grid_tables[method] = {}
        grid_tables.setdefault(method, {})[key] = values
    selection: dict[str, Any] = dict(data.get("selection", {}))
    for dotted, value in request.overrides.items():
        path, assignment = checked_path(dotted, value), f"{dotted}={value}"
        if path[0] == "selection" and len(path) >= 2:
            selection = deep_merge(selection, nested(path[1:], value))
        elif path[0] == "methods" and len(path) >= 3:
            if path[1] not in methods:
                raise BenchError(f"--set {assignment:.80}: method {path[1]!r} is not among --methods "
                                 f"({', '.join(methods)}); add it to --methods or fix the name")
            method_params = deep_merge(method_params, nested(path[1:], value))
        else:
            overrides = deep_merge(overrides, nested(path, value))
    resolved = [{"name": s.name, "config": table}
                for s, table in resolve_scenarios(request.preset, data, scenarios, overrides, request.smoke)]
    run: dict[str, Any] = {
        "request": request,
        "scenarios": resolved,
        "method_params": {m: method_params.get(m, {}) for m in methods},
        "grids": {m: grid_tables[m] for m in methods if m in grid_tables},
        "selection": selection,
    }
    if cache_dir is not None:
        run["cache_dir"] = cache_dir
    return validate_model(RunConfig, run, "the run configuration")


def grid_options(grids: Iterable[str] | Mapping[str, list[Any] | str]) -> list[tuple[str, str, str | None, Any]]:
    """``--grid`` options (or a mapping) as (option, method, key or None, values or DEFAULT_GRID)."""
    found = []
    items = grids.items() if isinstance(grids, Mapping) else ((option, None) for option in grids)
    for option, values in items:
        if "=" not in option and option.count(".") == 1 and option.startswith("methods.") and values in (None, DEFAULT_GRID):
            found.append((option, option.split(".", 1)[1], None, DEFAULT_GRID))
        elif values is None:
            found.append((option, *parse_grid_option(option)))
        else:
            found.append((option, *parse_grid_option(f"{option}=" + ",".join(map(str, values)))[:2], list(values)))
    return found
