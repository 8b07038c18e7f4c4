"""The JSON files of a results folder that hold results (records, curves), stored gzip-compressed.

A record's matrices and per-query outcomes (base64 bit-packed hits, float16 average precisions) are text that gzip
shrinks about threefold, and a published leaderboard holds hundreds of records. The compressed bytes carry no time
and no file name, so the same content gives the same file (with the same Python and zlib). Readers take the
compressed file, or the plain one that earlier versions wrote, so a folder written by an older version still reads.
"""
from __future__ import annotations

import gzip
import io
import json
import zlib
from pathlib import Path
from typing import Any

from benchbackcompat.runtime.files import TooLarge, read_regular
from benchbackcompat.store.checkpoint import atomic_write_bytes

SUFFIX = ".gz"
MAX_JSON_BYTES = 64 * 2**20  # a record's JSON: per-query outcomes of 50,000 queries x 55 matrix entries are ~8 MB


class OversizedFile(ValueError):
    """A results file whose content exceeds ``MAX_JSON_BYTES`` (read no further)."""


def packed_name(name: str) -> str:
    """The compressed file's name for the JSON file ``name`` (``record.json`` -> ``record.json.gz``)."""
    return name + SUFFIX


def stored_file(folder: Path, name: str) -> Path | None:
    """The file holding JSON file ``name`` in ``folder``: the compressed one, else a plain one that an earlier version
    wrote, else None."""
    for path in (folder / packed_name(name), folder / name):
        if path.is_file():
            return path
    return None


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed with a zero header time, so that equal data gives equal bytes."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def write_packed(folder: Path, name: str, text: str) -> Path:
    """Write ``text`` as ``folder/name.gz`` atomically, then remove a plain ``folder/name`` left by an earlier version
    (a crash in between leaves both, and readers take the compressed one); returns the path written."""
    path = folder / packed_name(name)
    atomic_write_bytes(path, gzip_bytes(text.encode()))
    (folder / name).unlink(missing_ok=True)
    return path


def read_json(path: Path) -> Any:
    """The JSON value stored in ``path``, decompressed when its name ends in ``.gz`` as a stream that stops past
    ``MAX_JSON_BYTES``. Raises OSError when the file cannot be read (or is not a regular file), :class:`OversizedFile`
    when its content is larger (e.g. a decompression bomb), ValueError when it holds no complete JSON (truncated,
    corrupted, not UTF-8) and RecursionError when its JSON is nested too deeply to parse."""
    too_large = OversizedFile(f"{path} holds more than {MAX_JSON_BYTES // 2**20} MiB of JSON, above the limit for a "
                              "results file (a decompression bomb?)")
    try:
        data = read_regular(path, MAX_JSON_BYTES)  # not a named pipe or a device planted under the name
    except TooLarge:
        raise too_large from None
    if path.name.endswith(SUFFIX):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
                data = stream.read(MAX_JSON_BYTES + 1)
        except (EOFError, zlib.error, gzip.BadGzipFile) as error:
            raise ValueError(f"{path} is not a complete gzip file ({error})") from error
        if len(data) > MAX_JSON_BYTES:
            raise too_large
    return json.loads(data)
