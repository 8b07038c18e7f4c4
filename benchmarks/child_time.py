"""A command run to its end and timed as its user waits for it: wall time and the CPU time of the processes it
started (user + system), for the scripts that time the command line (``main_command.py``, ``render.py``)."""
from __future__ import annotations

import resource
import subprocess
import time
from pathlib import Path


def run_timed(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of ``command``; a command that fails ends the script with its last line of stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"error: {' '.join(command[:3])} ... failed ({done.returncode}): "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
