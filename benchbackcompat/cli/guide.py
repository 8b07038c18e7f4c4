"""Generates the parts of docs/writing-a-method.md and docs/api.md that must not go stale.

Regions between ``<!-- generated:NAME -->`` and ``<!-- end:NAME -->`` are rewritten from the
code: the hook reference from the hookspecs' docstrings, the method interface from
:class:`benchbackcompat.method.Method`, the worked example from the scaffold's templates
(the code that tests/test_scaffold.py installs, runs and checks), and the run options of the Python API
from :class:`benchbackcompat.execution.request.RunRequest`'s fields.

``python -m benchbackcompat.cli.guide`` rewrites both pages; ``--check`` only reports whether they are current.
"""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "writing-a-method.md"
API = GUIDE.with_name("api.md")
EXAMPLE_NAME = "my-method"
REGION = re.compile(r"(<!-- generated:(?P<name>[\w-]+) -->\n).*?(<!-- end:(?P=name) -->)", re.S)


def markdown(docstring: str | None) -> str:
    """A reStructuredText docstring as Markdown: ``x`` -> `x`, :class:`a.B` -> `a.B`."""
    text = inspect.cleandoc(docstring or "")
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def signature(function: Callable) -> str:
    """``name(arg: type, ...) -> type`` without ``self`` and without quotes around annotations."""
    text = str(inspect.signature(function)).replace("'", "")
    return function.__name__ + text.replace("(self, ", "(").replace("(self)", "()")


def hookspec_functions() -> list[Callable]:
    """The hook specifications, in definition order."""
    from benchbackcompat import hookspecs

    return [f for f in vars(hookspecs).values() if inspect.isfunction(f) and hasattr(f, "benchbackcompat_spec")]


def hook_reference() -> str:
    from benchbackcompat import hookspecs

    lines = [f"Hook set version **{hookspecs.HOOKSET_VERSION}**. Every hook is optional.", ""]
    for function in hookspec_functions():
        lines += [f"### `{signature(function)}`", "",
                  f"*Since hook set {hookspecs.HOOKS_SINCE[function.__name__]}.* " + markdown(function.__doc__), ""]
    return "\n".join(lines).rstrip()


def method_interface() -> str:
    from benchbackcompat.method import Batch, Method, StepContext

    lines = ["`benchbackcompat.method.Method`: " + markdown(Method.__doc__), ""]
    annotations = inspect.get_annotations(Method)
    lines += [f"- `{name} = {value.__name__ if isinstance(value, type) else repr(value)}` (`{annotations[name]}`)"
              for name, value in vars(Method).items() if name in annotations]
    lines += ["", "| method | what it is for (default behaviour) |", "|---|---|"]
    for name, value in vars(Method).items():
        if inspect.isfunction(value) and not name.startswith("_") and value.__doc__:
            summary = markdown(value.__doc__).split("\n\n")[0].replace("\n", " ")
            escaped = signature(value).replace("|", "\\|")  # a pipe inside a table cell, even in code
            lines.append(f"| `{escaped}` | {summary} |")
    for cls in (StepContext, Batch):
        lines += ["", f"`{cls.__name__}`: " + markdown(cls.__doc__).split("\n\n")[0], ""]
        lines += [f"- `{field.name}: {field.type}`" for field in dataclasses.fields(cls) if not field.name.startswith("_")]
        lines += [f"- `{name}` (property): {' '.join(markdown(value.__doc__).split())}"
                  for name, value in vars(cls).items() if isinstance(value, property) and value.__doc__]
        lines += [f"- `{signature(value)}`: {markdown(value.__doc__).splitlines()[0]}"
                  for name, value in vars(cls).items() if inspect.isfunction(value) and not name.startswith("_") and value.__doc__]
    return "\n".join(lines)


def run_options() -> str:
    """The table of ``benchbackcompat.run``'s keywords: one row per run request field, with its type (without
    bounds), its default, its help and its option of ``benchbackcompat run``."""
    import typing

    from benchbackcompat.execution.request import API_DEFAULTS, RunRequest, flag_of

    types = typing.get_type_hints(RunRequest)
    lines = ["| keyword | type | default | meaning (command line) |", "|---|---|---|---|"]
    for name, field in RunRequest.model_fields.items():
        default = "required" if field.is_required() else \
            f"`{API_DEFAULTS.get(name, field.get_default(call_default_factory=True))!r}`"
        shown = inspect.formatannotation(types[name]).replace("typing.", "").replace("pathlib.", "")
        cells = [f"`{name}`", f"`{shown}`", default,
                 f"{field.description} (`{flag_of(name)}`)"]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def example_file(suffix: str) -> str:
    from benchbackcompat.cli.scaffold import render

    (text,) = [text for path, text in render(EXAMPLE_NAME).items() if path.endswith(suffix)]
    return text


def _code(language: str, text: str) -> str:
    return f"```{language}\n{text.rstrip()}\n```"


GENERATORS: dict[str, Callable[[], str]] = {
    "method-interface": method_interface,
    "example-method": lambda: _code("python", example_file("/method.py")),
    "example-test": lambda: _code("python", example_file(f"/test_bbc_{EXAMPLE_NAME.replace('-', '_')}.py")),
    "example-pyproject": lambda: _code("toml", example_file("pyproject.toml")),
    "hook-reference": hook_reference,
    "run-options": run_options,
}


def update(text: str) -> str:
    """``text`` with every generated region rewritten."""
    def replace(match: re.Match) -> str:
        name = match.group("name")
        if name not in GENERATORS:
            raise KeyError(f"unknown generated region {name!r}; known: {', '.join(GENERATORS)}")
        return f"{match.group(1)}{GENERATORS[name]()}\n{match.group(3)}"

    return REGION.sub(replace, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchbackcompat.cli.guide", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[GUIDE, API])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is not current, write nothing")
    args = parser.parse_args(argv)
    stale = 0
    for path in args.paths:
        text = path.read_text()
        current = update(text)
        if args.check:
            print(f"{path}: {'current' if current == text else 'stale; run python -m benchbackcompat.cli.guide'}")
            stale += current != text
        else:
            path.write_text(current)
            print(f"wrote {path}")
    return int(stale > 0)


if __name__ == "__main__":
    sys.exit(main())
