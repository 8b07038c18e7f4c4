"""User-facing errors: one line that names what is wrong and how to fix it."""
from __future__ import annotations

import difflib
from collections.abc import Iterable


class BenchError(Exception):
    """An error caused by the user's input; the CLI prints it as one line, no traceback."""


class UnknownNameError(BenchError, KeyError):
    """An unknown method, scenario, dataset or backbone name."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        self.kind, self.name, self.known = kind, name, sorted(known)
        close = difflib.get_close_matches(name, [k for k in self.known if k != name], n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        super().__init__(f"unknown {kind} {name!r}.{hint} Known: {', '.join(self.known) or '(none)'}.")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]
