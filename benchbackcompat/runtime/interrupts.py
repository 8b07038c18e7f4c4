"""Telling a real Ctrl-C from a ``KeyboardInterrupt`` (or ``SystemExit``) raised by plugin code.

Plugin and observer code is isolated with ``except BaseException``: whatever it raises fails only
its cell or its observer. Two things still go through: ``GeneratorExit`` (generator machinery) and a
``KeyboardInterrupt`` caused by a real SIGINT, which :func:`watching` notes as it arrives.

SIGTERM (``kill PID``, ``timeout``, ``docker stop``, job managers) ends a process at once, which is
safe for one process but would orphan the processes it started: :func:`stopping_on_sigterm` turns it
into :class:`Terminated` while such a process waits for its children, so that it stops them first.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_state = {"watching": False, "received": False}


class Terminated(KeyboardInterrupt):
    """A SIGTERM received while :func:`stopping_on_sigterm` holds: it unwinds like a Ctrl-C."""


def _on_sigint(signum, frame) -> None:
    _state["received"] = True
    signal.default_int_handler(signum, frame)


@contextmanager
def watching() -> Iterator[None]:
    """Note real SIGINTs while the block runs (main thread only; elsewhere every KeyboardInterrupt counts as real)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    saved = dict(_state)
    _state.update(watching=True, received=False)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _state.update(saved)


@contextmanager
def stopping_on_sigterm() -> Iterator[None]:
    """Raise :class:`Terminated` on SIGTERM while the block runs (main thread only; elsewhere SIGTERM keeps its
    handler)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _on_sigterm(signum, frame) -> None:
    raise Terminated("SIGTERM")


def must_propagate(error: BaseException) -> bool:
    """True for what isolation must not swallow: GeneratorExit, and a KeyboardInterrupt from a real Ctrl-C (any
    KeyboardInterrupt when SIGINTs are not watched)."""
    if isinstance(error, GeneratorExit):
        return True
    return isinstance(error, KeyboardInterrupt) and (_state["received"] or not _state["watching"])


def describe(error: BaseException) -> str:
    """``Type: message`` on one line (``SystemExit: 0`` for sys.exit(0))."""
    return f"{type(error).__name__}: {error}".splitlines()[0]
