"""What Linux reports of this machine's first processor (``/proc/cpuinfo``): its flags and its model."""
from __future__ import annotations

import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def first_processor() -> dict[str, str]:
    """The fields of the first processor block, e.g. ``model name``, ``cpu family``, ``model``, ``flags``; {} off
    Linux or where the file cannot be read."""
    if platform.system() != "Linux":
        return {}
    try:
        text = CPUINFO.read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields.setdefault(name.strip(), value.strip())
    return fields


def processor_model() -> str:
    """The processor as fp32 rounding depends on it: its model name with its family and model numbers (virtual
    machines often report a generic name, and the numbers still tell one processor generation from another)."""
    fields = first_processor()
    name = fields.get("model name") or platform.processor() or platform.machine()
    numbers = [f"{word} {fields[key]}" for key, word in (("cpu family", "family"), ("model", "model")) if key in fields]
    return f"{name} ({', '.join(numbers)})" if numbers else name
