"""What a method offers, read from its code: hyperparameters (type, default, range, description from its
``Params`` model), the scenarios of a preset it supports, and the paper it comes from."""
from __future__ import annotations

import inspect
import re
import sys
import types
import typing
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from benchbackcompat.scenarios.kinds import NamedScenario
from benchbackcompat.method import Method

BOUNDS = ((annotated_types.Ge, ">="), (annotated_types.Gt, ">"), (annotated_types.Le, "<="), (annotated_types.Lt, "<"))


def type_name(annotation: Any) -> str:
    """``float``, ``int | None``, ``'official' | 'paper'`` for a field annotation."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return " | ".join(repr(value) for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(arg) for arg in typing.get_args(annotation))
    if origin is not None:
        return str(annotation).replace("typing.", "")
    return "None" if annotation is type(None) else getattr(annotation, "__name__", str(annotation))


def value_range(field: FieldInfo) -> str:
    """``>= 0, <= 1`` from the field's constraints, or ``""``."""
    parts = [f"{symbol} {getattr(item, type(item).__name__.lower())}"
             for item in field.metadata for kind, symbol in BOUNDS if isinstance(item, kind)]
    return ", ".join(parts)


def default_text(field: FieldInfo) -> str:
    if field.default is PydanticUndefined:
        return "(required)" if field.default_factory is None else repr(field.default_factory())
    return repr(field.default)


def parameter_rows(params: type[BaseModel]) -> list[dict[str, str]]:
    """One row per hyperparameter: name, type, default, range, description."""
    return [
        {"name": name, "type": type_name(field.annotation), "default": default_text(field),
         "range": value_range(field), "description": field.description or ""}
        for name, field in params.model_fields.items()
    ]


def paper(method: type[Method]) -> str:
    """The first paragraph of the method module's docstring, which names the method and its paper."""
    module = sys.modules.get(method.__module__)
    text = inspect.getdoc(module) or method.description
    return re.sub(r"^``[^`]+``:\s*", "", " ".join(text.split("\n\n")[0].split()))


def support(method: type[Method], scenarios: list[NamedScenario]) -> list[tuple[str, str, str | None]]:
    """(scenario, kind, None or the reason it is not supported) for each scenario."""
    instance = method()
    return [(named.name, named.config.kind, instance.unsupported_reason(named.config)) for named in scenarios]


def describe_method(name: str, method: type[Method], scenarios: list[NamedScenario], preset: str) -> str:
    from tabulate import tabulate

    rows = [list(row.values()) for row in parameter_rows(method.Params)]
    table = (tabulate(rows, headers=["hyperparameter", "type", "default", "range", "description"], tablefmt="simple",
                      disable_numparse=True) if rows else "(no hyperparameters)")
    lines = [f"{name}: {method.description}", f"paper: {paper(method)}",
             f"head: {method.head}; standard steps shared with other methods: {method.standard_steps}", "", table, "",
             f"scenarios of preset {preset!r}:"]
    for scenario, kind, reason in support(method, scenarios):
        lines.append(f"  {scenario} ({kind}): " + (f"not supported: {reason}" if reason else "supported"))
    lines.append(f"\nset one with --set methods.{name}.FIELD=VALUE")
    return "\n".join(lines)
