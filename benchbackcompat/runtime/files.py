"""Files that someone else may have planted: read only when they are regular files, up to a bound, and folders that
must stay inside a root.

A link to ``/dev/zero`` would fill memory and a named pipe would block a reader forever, so a file is opened without
blocking, checked to be a regular file on the descriptor itself (no race between a check and the open) and read up to
a stated limit. A folder that resolves outside the root it belongs to (a link out of it) is refused, so that nothing
is read, written or deleted through it.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path


class NotRegularFile(OSError):
    """A path that is not a regular file (a device, a named pipe, a socket, a folder); ``what`` says which."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(0, f"not a regular file ({what})", str(path))
        self.what = what


class TooLarge(ValueError):
    """A file whose content exceeds the limit its reader states."""


def read_regular(path: Path, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of regular file ``path``; :class:`NotRegularFile` for anything else (without blocking on a named
    pipe), :class:`TooLarge` when it holds more than ``limit`` bytes (read no further), OSError when it cannot be read.
    ``follow`` False: a link is refused too (ELOOP)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, kind(mode))
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise TooLarge(f"{path} holds more than {limit:,} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def kind(mode: int) -> str:
    """What a file of ``mode`` is, in words."""
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISLNK, "a link")):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def outside(root: Path, path: Path) -> Path | None:
    """Where ``path`` resolves to when that is outside ``root`` (resolved too), else None."""
    real = Path(os.path.realpath(path))
    return None if real.is_relative_to(os.path.realpath(root)) else real
