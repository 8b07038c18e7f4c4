"""Argument types and option groups shared by the commands."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (the usage stays in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


LOGGING_DESTS = ("verbose", "quiet", "log_file", "progress")


def logging_options(parser: argparse.ArgumentParser, defaults: dict[str, Any] | None = None) -> None:
    """-v, -q, --log-file and --progress, which every command takes; without ``defaults`` an option that is not
    given leaves no attribute (so one given after the command wins over one given before it)."""
    defaults = defaults or dict.fromkeys(LOGGING_DESTS, argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="count", default=defaults["verbose"], help="more log lines (debug)")
    parser.add_argument("-q", "--quiet", action="store_true", default=defaults["quiet"], help="warnings and errors only")
    parser.add_argument("--log-file", type=Path, default=defaults["log_file"],
                        help="also write the log to this file (with time stamps)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=defaults["progress"],
                        help="progress bars (default: only when stderr is a terminal)")


def seeds(text: str) -> list[int]:
    from benchbackcompat.execution.request import parse_seeds

    try:
        return parse_seeds(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def positive(kind: type, words: tuple[str, ...] = ()) -> Any:
    """An argparse type: a positive ``kind`` (int or float), or one of ``words`` (``auto``)."""
    def parse(text: str) -> Any:
        if text in words:
            return text
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value <= 0:
            expected = f"a positive {'integer' if kind is int else 'number'}" + "".join(f" or {w}" for w in words)
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}")
        return value
    parse.__name__ = f"positive {kind.__name__}"
    return parse


def pairs(option: str) -> Any:
    """``KEY=VALUE`` -> (KEY, VALUE)."""
    def parse(text: str) -> tuple[str, str]:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE, e.g. {option}")
        return key.strip(), value
    parse.__name__ = "KEY=VALUE"
    return parse


def filters(command: argparse.ArgumentParser) -> None:
    command.add_argument("--scenario", default="", metavar="NAME[,NAME]", help="only these scenarios (comma-separated)")
    command.add_argument("--methods", default="", metavar="NAME[,NAME]", help="only these methods (comma-separated)")
