"""No orphaned processes: a process started to work for another (a ``--workers`` process, a
``--cell-timeout`` child) dies with it.

A parent killed outright (SIGKILL, the out-of-memory killer) cannot stop its children, and a child
re-parented to init would finish its cell and then wait forever for work, holding its memory. On
Linux the kernel kills the child when its parent dies (``PR_SET_PDEATHSIG``, which works even while
the child is stuck in C code); elsewhere a daemon thread checks the parent every second. Dying at
any moment is safe: finished steps and records are written atomically and locks are released by
the kernel. A Ctrl-C is left to the parent, which stops its children itself.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
POLL_S = 1.0


def die_with_parent(parent: int) -> None:
    """Have this process killed (SIGKILL) as soon as process ``parent``, which started it, is gone, and ignore
    SIGINT (a terminal's Ctrl-C reaches the whole process group; the parent decides)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not _kernel_kills_orphans():
        threading.Thread(target=_watch, args=(parent,), name="die-with-parent", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the kernel was told
        os.kill(os.getpid(), signal.SIGKILL)


def _kernel_kills_orphans() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os.kill(os.getpid(), signal.SIGKILL)
