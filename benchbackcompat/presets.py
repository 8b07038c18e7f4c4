"""Scenario preset files (TOML) and the resolution of a run configuration.

A preset file has an optional ``[defaults]`` table merged into every scenario, one table per
scenario under ``[scenarios.<name>]`` (with its ``kind``), and method hyperparameters under
``[methods.<name>]``, hyperparameter grids under ``[grids.<method>]`` (``key = [values]``) and the
validation split and tolerance of selection under ``[selection]``. Command-line values are applied last.
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from benchbackcompat.config import NamedScenario, RunConfig, validate_model
from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.selection import DEFAULT_GRID, parse_grid_option

PRESET_ENV = "BENCHBACKCOMPAT_PRESETS"
REPO_PRESETS = Path(__file__).resolve().parents[1] / "scenarios"


def preset_dirs() -> list[Path]:
    """Where named presets are looked up: ``$BENCHBACKCOMPAT_PRESETS`` (colon-separated), then the repository's ``scenarios/``."""
    extra = [Path(p) for p in os.environ.get(PRESET_ENV, "").split(os.pathsep) if p]
    return [*extra, REPO_PRESETS]


def available_presets() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for directory in reversed(preset_dirs()):
        if directory.is_dir():
            found.update({p.stem: p for p in sorted(directory.glob("*.toml"))})
    return found


def preset_path(preset: str) -> Path:
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
    except OSError as error:
        raise BenchError(f"cannot read preset {path}: {error.strerror or error}") from None
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


def parse_assignment(text: str) -> tuple[list[str], Any]:
    """``train.epochs=3`` -> (["train", "epochs"], 3); the value is read as TOML, else kept as a string."""
    if "=" not in text:
        raise BenchError(f"--set {text!r}: expected KEY=VALUE, for example --set train.epochs=3")
    key, raw = text.split("=", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip().split("."), value


def nested(path: list[str], value: Any) -> dict[str, Any]:
    result: Any = value
    for key in reversed(path):
        result = {key: result}
    return result


def split_list(text: str | None) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def resolve_run(
    *,
    preset: str = "quick",
    scenarios: list[str],
    methods: list[str],
    seeds: list[int] | None = None,
    scenario_overrides: dict[str, Any] | None = None,
    assignments: list[str] = (),
    grids: list[str] = (),
    out: Path | None = None,
    device: str | None = None,
    cache_dir: Path | None = None,
) -> RunConfig:
    """Build the run configuration: defaults < preset < command line. Fails with one line on any bad value.

    ``grids`` are ``--grid methods.NAME.KEY=V1,V2`` options: each replaces the preset's values of that key;
    ``--grid methods.NAME`` (no key) searches the default grid that the method declares (its ``Params.grid``)."""
    data = load_preset(preset)
    known = data["scenarios"]
    if scenarios == ["all"]:
        scenarios = list(known)
    overrides = dict(scenario_overrides or {})
    method_params: dict[str, dict[str, Any]] = {k: dict(v) for k, v in data.get("methods", {}).items()}
    grid_tables: dict[str, Any] = {k: v if v == DEFAULT_GRID else dict(v) for k, v in data.get("grids", {}).items()}
    for option in grids:
        if "=" not in option and option.count(".") == 1 and option.startswith("methods."):
            grid_tables[option.split(".", 1)[1]] = DEFAULT_GRID
            continue
        method, key, values = parse_grid_option(option)
        if grid_tables.get(method) == DEFAULT_GRID:
            grid_tables[method] = {}
        grid_tables.setdefault(method, {})[key] = values
    selection: dict[str, Any] = dict(data.get("selection", {}))
    for assignment in assignments:
        path, value = parse_assignment(assignment)
        if path[0] == "selection" and len(path) >= 2:
            selection = deep_merge(selection, nested(path[1:], value))
        elif path[0] == "methods" and len(path) >= 3:
            method_params = deep_merge(method_params, nested(path[1:], value))
        else:
            overrides = deep_merge(overrides, nested(path, value))
    resolved = []
    for name in scenarios:
        if name not in known:
            raise UnknownNameError(f"scenario (preset {preset!r})", name, known)
        table = deep_merge(deep_merge(data.get("defaults", {}), known[name]), overrides)
        resolved.append({"name": name, "config": table})
    for entry in resolved:
        validate_model(NamedScenario, entry, f"preset {preset!r}, scenario {entry['name']!r}")
    run: dict[str, Any] = {
        "preset": preset,
        "scenarios": resolved,
        "methods": methods,
        "method_params": {m: method_params.get(m, {}) for m in methods},
        "grids": {m: grid_tables[m] for m in methods if m in grid_tables},
        "selection": selection,
    }
    if seeds is not None:
        run["seeds"] = seeds
    for key, value in (("out", out), ("device", device), ("cache_dir", cache_dir)):
        if value is not None:
            run[key] = value
    return validate_model(RunConfig, run, "the run configuration")
