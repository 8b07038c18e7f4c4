"""Fault injection for the robustness tests, and out-of-memory detection.

``BENCHBACKCOMPAT_FAULT="POINT[@N]:ACTION[,...]"`` makes the N-th (default first) time the
process reaches a fault point matching the ``fnmatch`` pattern POINT do ACTION: ``kill``
(SIGKILL itself: no cleanup, like a pre-empted node or the out-of-memory killer), ``hang`` (sleep
forever, like a deadlocked plugin), ``raise`` (RuntimeError), ``oom`` (``torch.OutOfMemoryError``)
or ``full`` (OSError ENOSPC, as a full disk raises it: naming no file). Points: ``cell:<label>``
(a cell's computation starting, in the process that computes it), ``train-batch`` (each training
batch), ``extract-batch`` (each feature-extraction batch), ``write:<file name>`` (a file written
but not yet moved into place), ``swap:<path>`` (a rendered leaderboard file about to be moved into
the published folder). Spawned processes (``--workers``, ``--cell-timeout``) read the variable too,
each counting its own hits.
Unset, :func:`fault_point` is one truthiness test.
"""
from __future__ import annotations

import errno
import fnmatch
import logging
import os
import signal
import time

from benchbackcompat.errors import BenchError

ENV = "BENCHBACKCOMPAT_FAULT"
ACTIONS = ("kill", "hang", "raise", "oom", "full")

_rules: list[tuple[str, int, str]] = []  # (pattern, hit number, action)
_hits: dict[str, int] = {}


def configure(spec: str | None) -> None:
    """Replace the active faults with ``spec`` (None or "" clears them) and reset the hit counts."""
    rules = []
    for item in filter(None, (part.strip() for part in (spec or "").split(","))):
        point, _, action = item.rpartition(":")
        pattern, _, nth = point.partition("@")
        if not pattern or action not in ACTIONS or not (nth or "1").isdigit() or int(nth or 1) < 1:
            raise BenchError(f"{ENV}: cannot read {item!r}; expected POINT[@N]:ACTION with ACTION one of {', '.join(ACTIONS)}")
        rules.append((pattern, int(nth or 1), action))
    _rules[:] = rules
    _hits.clear()


def fault_point(name: str) -> None:
    """Count a pass through ``name`` and inject the configured fault when its turn comes."""
    if _rules:
        _trigger(name)


def _trigger(name: str) -> None:
    for pattern, nth, action in _rules:
        if not fnmatch.fnmatchcase(name, pattern):
            continue
        _hits[pattern] = count = _hits.get(pattern, 0) + 1
        if count != nth:
            continue
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        while action == "hang":
            time.sleep(3600)
        if action == "oom":
            import torch  # here and below: torch is loaded by the code that reaches a fault point

            raise torch.OutOfMemoryError(f"injected out of memory at {name}")
        if action == "full":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        raise RuntimeError(f"injected fault at {name}")


def is_out_of_memory(error: BaseException) -> bool:
    """True for CUDA/MPS/CPU allocation failures (the caller may retry with less memory)."""
    import torch

    if isinstance(error, torch.OutOfMemoryError):
        return True
    text = str(error)
    return isinstance(error, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def halve_on_oom(error: BaseException, size: int, what: str) -> int:
    """The smaller chunk size to retry ``what`` with after ``error``; re-raises anything but an
    out-of-memory error, and out of memory at size 1."""
    if not is_out_of_memory(error) or size <= 1:
        raise error
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    logging.getLogger("benchbackcompat").warning(f"out of memory in {what} with chunks of {size}; retrying with {size // 2}")
    return size // 2


configure(os.environ.get(ENV))
