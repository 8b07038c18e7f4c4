"""Nested settings as text: a ``--set KEY=VALUE`` override read and written back, a value as TOML, and the
nesting depth that presets, overrides and claims files may not exceed."""
from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from benchbackcompat.errors import BenchError

MAX_DEPTH = 8  # tables nested deeper than this are refused (presets need 3 levels)
BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def depth(value: Any, limit: int = MAX_DEPTH + 1) -> int:
    """Nesting depth of tables and arrays in ``value``, counted up to ``limit``."""
    if limit == 0 or not isinstance(value, (dict, list)):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((depth(child, limit - 1) for child in children), default=0)


def nested(path: list[str], value: Any) -> dict[str, Any]:
    result: Any = value
    for key in reversed(path):
        result = {key: result}
    return result


def parse_override(text: str) -> tuple[str, Any]:
    """``train.epochs=3`` -> ("train.epochs", 3): a ``--set`` option as a request's override."""
    if "=" not in text:
        raise BenchError(f"--set {text!r}: expected KEY=VALUE, for example --set train.epochs=3")
    key, raw = text.split("=", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    except RecursionError:
        value = nested(["x"] * MAX_DEPTH, 0)
    return key.strip(), value


def format_override(key: str, value: Any) -> str:
    """The ``--set`` text that :func:`parse_override` reads back as (key, value): the value as TOML, or a string's
    bare text where that is not TOML (``methods.cores.init=random``)."""
    if isinstance(value, str):
        try:
            tomllib.loads(f"v = {value}")
        except tomllib.TOMLDecodeError:
            return f"{key}={value}"
    return f"{key}={toml_value(value)}"


def toml_key(name: str) -> str:
    return name if BARE_KEY.fullmatch(name) else json.dumps(name)


def toml_value(value: Any) -> str:
    """A TOML value (inline tables and arrays); None inside a table or array is left out (TOML has no null)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items() if v is not None) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value if v is not None) + "]"
    if isinstance(value, float) and value != value:
        return "nan"
    return json.dumps(value)  # strings, booleans, integers and finite floats are written alike in JSON and TOML
