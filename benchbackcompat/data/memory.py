"""Whether images fit in memory: checked before they are allocated, so an image size the data and the machine cannot
hold fails in one line instead of asking for hundreds of gigabytes."""
from __future__ import annotations

import os
import resource

from benchbackcompat.errors import BenchError


def available_memory() -> int | None:
    """Bytes this process may still allocate: the memory the kernel reports available (``MemAvailable``, else free
    pages), within the process's address-space limit; None when neither is known."""
    found = None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            found = next((int(line.split()[1]) * 1024 for line in meminfo if line.startswith("MemAvailable:")), None)
    except (OSError, ValueError):
        pass
    if found is None:
        try:
            found = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            found = None
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        found = limit if found is None else min(found, limit)
    return found


def check_images_fit(images: int, size: int, where: str, channels: int = 3, extra: tuple[int, str] = (0, "")) -> None:
    """Refuse ``images`` uint8 images of ``channels`` x ``size`` x ``size`` whose bytes, with the ``extra`` bytes that
    making them takes (bytes, what they are), exceed the available memory."""
    need, limit = images * channels * size * size + extra[0], available_memory()
    if limit is not None and need > limit:
        besides = f" with {extra[1]} ({extra[0] / 2**30:.1f} GiB)" if extra[0] else ""
        raise BenchError(f"{where}: {images} images of {channels}x{size}x{size} pixels{besides} need "
                         f"{need / 2**30:.1f} GiB, above the {limit / 2**30:.1f} GiB of memory available; lower "
                         "data.image_size (or the images per class)")


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is an allocation that failed (Python's MemoryError, or torch's allocator refusing)."""
    return isinstance(error, MemoryError) or (isinstance(error, RuntimeError) and "allocate" in str(error)
                                              and "memory" in str(error))
