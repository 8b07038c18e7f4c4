"""Where real datasets live: finding them under a data root, and reading a folder or a zip alike."""
from __future__ import annotations

import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

from benchbackcompat.data.cache import file_fingerprint
from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.files import NotRegularFile, TooLarge, read_regular

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
MAX_MEMBER_BYTES = 4 * 40_000_000  # a file of a dataset: the largest image decoded (``decode.MAX_PIXELS``) as raw RGBA
ARCHIVE_RATIO = 20  # bytes an archive may unpack to, per byte of the archive: JPEG and PNG do not compress further
MIN_ARCHIVE_BYTES = 256 * 2**20  # ... and at least this (a small archive of text files)


class DirTree:
    """The files under a folder, by POSIX path relative to it (sorted)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        names, total, latest = [], 0, 0
        for folder, dirs, files in os.walk(path):
            dirs.sort()
            rel = Path(folder).relative_to(path).as_posix()
            for file in files:
                stat = os.stat(os.path.join(folder, file))
                names.append(file if rel == "." else f"{rel}/{file}")
                total, latest = total + stat.st_size, max(latest, stat.st_mtime_ns)
        self.names = sorted(names)
        self.fingerprint: list[Any] = [path.name, len(names), total, latest]

    def read(self, name: str) -> bytes:
        """The file ``name``; one that is not a regular file (a link to a device such as ``/dev/zero``, a named pipe)
        or holds more than ``MAX_MEMBER_BYTES`` is refused in one line naming it, unread."""
        path = self.path / name
        try:
            return read_regular(path, MAX_MEMBER_BYTES)
        except TooLarge:
            raise BenchError(f"{path} holds more than {MAX_MEMBER_BYTES // 2**20} MiB, above the limit for a file of a "
                             "dataset; remove or shrink it") from None
        except NotRegularFile as error:
            raise BenchError(f"{path} is {error.what}, not a regular file; refusing to read it: remove it or put the "
                             "file itself there") from None
        except OSError as error:
            raise BenchError(f"{self.path}: cannot read {name} ({error.strerror or error}); restore the file or "
                             "remove what names it") from None


class ZipTree:
    """The files in a zip archive, read in place (opened on first use, so a cache hit only
    stats the file); refuses members whose path escapes the archive."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fingerprint = file_fingerprint(path)
        self.unpacked = 0  # bytes read out of the archive so far

    @property
    def budget(self) -> int:
        """The bytes the archive may unpack to in all: ``ARCHIVE_RATIO`` times its size, at least ``MIN_ARCHIVE_BYTES``
        (many members each below ``MAX_MEMBER_BYTES`` are a decompression bomb too)."""
        return max(MIN_ARCHIVE_BYTES, ARCHIVE_RATIO * self.fingerprint[1])

    @cached_property
    def zip(self) -> zipfile.ZipFile:
        try:
            archive = zipfile.ZipFile(self.path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise BenchError(f"cannot read the zip {self.path}: {exc}; "
                             "pass --data-root pointing at a valid zip or folder") from exc
        for name in archive.namelist():
            check_member(self.path, name)
        return archive

    @cached_property
    def names(self) -> list[str]:
        return sorted(n for n in self.zip.namelist() if not n.endswith("/"))

    def read(self, name: str) -> bytes:
        """The member ``name``, decompressed as a stream up to ``MAX_MEMBER_BYTES``: a member above it (by its
        header or its content: a decompression bomb), missing or damaged is refused in one line naming it."""
        where = f"zip {self.path}, member {name}"
        try:
            info = self.zip.getinfo(name)
        except KeyError:
            raise BenchError(f"{where}: missing (named by the dataset's layout or annotations); the archive is "
                             "incomplete: fetch it again") from None
        limit = f"above the limit of {MAX_MEMBER_BYTES // 2**20} MiB for a file of a dataset (a decompression bomb?)"
        if info.file_size > MAX_MEMBER_BYTES:
            raise BenchError(f"{where}: expands to {info.file_size / 2**20:.0f} MiB, {limit}; refusing to unpack it")
        left = self.budget - self.unpacked
        if info.file_size > left:
            raise self._over_budget(name)
        try:
            with self.zip.open(info) as member:
                data = member.read(min(MAX_MEMBER_BYTES, left) + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as error:
            raise BenchError(f"{where}: cannot be read ({type(error).__name__}: {str(error)[:80]}); the archive is "
                             "damaged or incomplete: fetch it again") from None
        if len(data) > MAX_MEMBER_BYTES:
            raise BenchError(f"{where}: expands beyond {MAX_MEMBER_BYTES // 2**20} MiB, {limit}; refusing to unpack it")
        if len(data) > left:  # its header understated its size
            raise self._over_budget(name)
        self.unpacked += len(data)
        return data

    def _over_budget(self, name: str) -> BenchError:
        return BenchError(f"zip {self.path}: its members unpack to more than {self.budget // 2**20} MiB "
                          f"({ARCHIVE_RATIO} times the archive's size, at least {MIN_ARCHIVE_BYTES // 2**20} MiB) by "
                          f"member {name} (a decompression bomb?); refusing to unpack more: fetch the archive again")


FileTree = DirTree | ZipTree


def check_member(archive: Path, name: str) -> None:
    """Raise BenchError when a zip member name is absolute or climbs out of the archive."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or re.match(r"^[A-Za-z]:", name):
        raise BenchError(f"zip {archive} has a member path escaping the archive ({name!r}); refusing to read it")


def open_tree(path: Path) -> FileTree:
    return ZipTree(path) if path.is_file() else DirTree(path)


def locate(dataset: str, root: Path | None, candidates: Iterable[str], is_tree: Callable[[Path], bool],
           expected: str) -> Path:
    """The data of `dataset` under `root`: the zip itself, a folder laid out as expected
    (`is_tree`), or the first of `candidates` (file or folder names) inside it."""
    if root is None:
        raise BenchError(f"{dataset} needs a data root: pass --data-root DIR containing {expected}")
    if root.is_file():
        return root
    if root.is_dir():
        if is_tree(root):
            return root
        for name in candidates:
            if (root / name).exists():
                return root / name
    raise BenchError(f"{dataset} not found under {root}: pass --data-root DIR containing {expected}")


def find_prefix(names: list[str], *markers: str) -> str | None:
    """The shortest folder prefix ("" or "top/") under which every marker path exists
    (a marker ending in "/" is a folder). Looks at the top level and one folder down."""
    tops = sorted({n.split("/", 1)[0] + "/" for n in names if "/" in n})
    for prefix in ["", *tops]:
        if all(any(n.startswith(prefix + m) if m.endswith("/") else n == prefix + m for n in names) for m in markers):
            return prefix
    return None


def is_image(name: str) -> bool:
    return name.lower().endswith(IMAGE_SUFFIXES)
