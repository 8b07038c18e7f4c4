"""Advisory file locks (POSIX ``flock``) so that several processes can share one results directory.

A lock is released by the kernel when its holder dies, so a killed run never leaves a stale lock.
The holder writes ``host pid start-time`` into the lock file, so that a process kept waiting can say
who holds it, and give up after ``timeout`` seconds with an error naming the holder. A lock file is never
written through a link, nor when it has other names (a hard link): someone else's file planted as a lock would be
emptied, so it is refused in one line instead.
"""
from __future__ import annotations

import datetime as dt
import fcntl
import logging
import os
import platform
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.files import kind, read_regular

POLL_S = 0.2


def process_running(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (one that exists but is not ours counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder(path: Path) -> str:
    """Who holds the lock at ``path`` (as its holder wrote it), or "an unknown process"."""
    try:
        text = read_regular(path, HOLDER_BYTES, follow=False).decode("utf-8", "replace")
    except (OSError, ValueError):
        text = ""
    text = "".join(c if c.isprintable() else " " for c in text).strip()  # one line, no terminal control
    return text or "an unknown process"


HOLDER_BYTES = 256  # a holder's line is ~60 bytes: a longer one was not written by a holder


@contextmanager
def file_lock(path: Path, *, blocking: bool = True, timeout: float | None = None, what: str | None = None) -> Iterator[bool]:
    """Hold an exclusive lock on ``path`` (created if missing); yields False when ``blocking`` is
    False and another process holds it. Blocking with a ``timeout`` raises BenchError naming the holder. ``what``:
    what the lock guards, in words, for the line that says a process waits for it (default: the file's name)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open_lock(path)
    try:
        if not _acquire(fd, path, blocking, timeout, what):
            yield False
            return
        started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{platform.node()} pid {os.getpid()} since {started}\n".encode(), 0)
        try:
            yield True
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _open_lock(path: Path) -> int:
    """A descriptor of lock file ``path`` (created if missing); a link, anything but a regular file, or a file with
    other names (hard links) is refused in one line, so that the lock never truncates a file that is not its own."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fix = "remove it (a lock file is recreated when needed)"
    try:
        fd = os.open(path, flags, 0o644)
    except OSError:
        if os.path.islink(path):
            raise BenchError(f"lock {path} is a link to {os.path.realpath(path)}; refusing to write through it: {fix}") \
                from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        what = kind(info.st_mode) if not stat.S_ISREG(info.st_mode) else f"a file with {info.st_nlink} names (hard links)"
        raise BenchError(f"lock {path} is {what}, not a lock file of its own; refusing to write to it: {fix}")
    return fd


def _acquire(fd: int, path: Path, blocking: bool, timeout: float | None, what: str | None) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        if not blocking:
            return False
    logging.getLogger("benchbackcompat").info(f"waiting for {what or path.name}, held by {holder(path)}")
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            time.sleep(POLL_S)
    raise BenchError(f"lock {path} is still held by {holder(path)} after {timeout:g} s; wait for that process, "
                     "or raise --lock-timeout")
