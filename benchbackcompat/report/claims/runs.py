"""The ``benchbackcompat run`` commands that store a claim's declared run: its deciding scenario with every compared
row at the declared seeds, one command per set of hyperparameters (rows with the methods' own defaults share one)."""
from __future__ import annotations

import json
import shlex
import tomllib
from typing import Any

from benchbackcompat.report.claims.declared import Claim
from benchbackcompat.report.claims.judge import compared_rows


def toml_value(value: Any) -> str:
    """``value`` as a TOML value (strings quoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(key)} = {toml_value(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return repr(value)


def set_value(value: Any) -> str:
    """``value`` as ``--set`` reads it back: TOML, or a string's bare text where that is not TOML (``init=random``)."""
    if isinstance(value, str):
        try:
            tomllib.loads(f"v = {value}")
        except tomllib.TOMLDecodeError:
            return value
    return toml_value(value)


def declared_runs(claim: Claim, preset: str = "") -> list[str]:
    """The commands that run the deciding scenario of ``claim`` with its compared rows at seeds 0 .. seeds-1 and the
    configuration values it names (``deciding_config``); [] for a claim without a deciding scenario."""
    if not claim.deciding:
        return []
    groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for method, params in compared_rows(claim):
        options = tuple((f"methods.{method}.{key}", set_value(value)) for key, value in sorted(params.items()))
        groups.setdefault(options, []).append(method)
    common = [("--preset", preset)] if preset else []
    common += [("--scenario", claim.deciding)]
    tail = [("--seeds", f"0-{claim.seeds - 1}")]
    tail += [("--set", f"{key}={set_value(value)}") for key, value in claim.deciding_config.items()]
    commands = []
    for options, methods in sorted(groups.items()):
        words = ["benchbackcompat", "run"]
        for flag, value in [*common, ("--methods", ",".join(methods)), *tail,
                            *(("--set", f"{key}={value}") for key, value in options)]:
            words += [flag, value]
        commands.append(shlex.join(words))
    return commands
