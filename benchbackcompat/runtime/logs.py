"""Logging and progress bars, configured once per process.

Messages go through the standard :mod:`logging` module under the ``benchbackcompat`` logger:
INFO lines plain, warnings and errors prefixed with their level, each on its own line (written
through ``tqdm.write`` so that they never land in the middle of a bar). Progress bars are drawn
only on a terminal, or when asked for; one switch turns every bar of the run on or off, so a
redirected log holds no carriage returns or escape sequences.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from tqdm.auto import tqdm

from benchbackcompat.runtime.terminal import printable

LOGGER = "benchbackcompat"
log = logging.getLogger(LOGGER)
T = TypeVar("T")

_bars = {"enabled": False}


class _LevelPrefix(logging.Formatter):
    """``message`` for INFO and DEBUG, ``warning: message`` / ``error: message`` above; text from records and files
    that a message quotes is printed, never obeyed by the terminal (``runtime.terminal``)."""

    def format(self, record: logging.LogRecord) -> str:
        text = printable(super().format(record), lines=True)
        return text if record.levelno < logging.WARNING else f"{record.levelname.lower()}: {text}"


class _BarSafeHandler(logging.Handler):
    """Writes each message on its own line of the current ``sys.stderr``, above any progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # logging must never stop a run
            self.handleError(record)


def configure(verbosity: int = 0, log_file: Path | None = None, progress: bool | None = None) -> None:
    """Set up the ``benchbackcompat`` logger (replacing an earlier setup) and the progress bars.

    ``verbosity``: -1 warnings and errors only (``-q``), 0 one line per cell and step (default),
    1 and more adds debug lines (``-v``). ``log_file`` receives every line at the chosen level with
    a time stamp. ``progress``: None draws bars only when stderr is a terminal (and ``TQDM_DISABLE`` is unset)."""
    level = logging.WARNING if verbosity < 0 else logging.INFO if verbosity == 0 else logging.DEBUG
    for handler in list(log.handlers):
        log.removeHandler(handler)
        handler.close()
    console = _BarSafeHandler()
    console.setFormatter(_LevelPrefix("%(message)s"))
    log.addHandler(console)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        file = logging.FileHandler(log_file, encoding="utf-8")
        file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(file)
    log.setLevel(level)
    # a thread lock, not tqdm's default named semaphore: each process is spawned with its own lock anyway, and a process
    # killed at any moment (a worker, a cell's child) would leave its semaphore for the resource tracker to warn about
    tqdm.set_lock(threading.RLock())
    on_terminal = sys.stderr.isatty() and os.environ.get("TQDM_DISABLE", "") in ("", "0", "false", "False")
    _bars["enabled"] = on_terminal if progress is None else progress


def bars_enabled() -> bool:
    return _bars["enabled"]


def progress_bar(iterable: Iterable[T] | None = None, *, disable: bool = False, **kwargs: Any) -> tqdm:
    """A tqdm bar on stderr, drawn only when bars are enabled (see :func:`configure`) and not ``disable``."""
    return tqdm(iterable, disable=disable or not _bars["enabled"], dynamic_ncols=True, file=sys.stderr, **kwargs)
