"""Compare two results directories cell by cell, exactly: status, reason, matrices, metrics, curves, notes, steps.

    python benchmarks/compare_results.py results-before results-after

Cells are matched by label (scenario/method/seedN), so a change of cell key (configuration hashing) is not a
difference; a NaN equals null (records store a NaN as null since JSON became strict). Reads ``cells/*/record.json.gz``
(and the plain ``record.json`` of older folders) directly, independent of the store's code; curves from
``curves.json.gz`` or ``curves.json`` beside them, or inline in older records. Exit status 1 on any difference, with
one line per differing field.
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

COMPARED = ("status", "reason", "steps", "matrices", "metrics", "curves", "notes")


def read(folder: Path, name: str) -> Any:
    """JSON file ``name`` of a cell folder, compressed or plain (None when neither exists)."""
    if (folder / f"{name}.gz").is_file():
        return json.loads(gzip.decompress((folder / f"{name}.gz").read_bytes()))
    return json.loads((folder / name).read_text()) if (folder / name).is_file() else None


def load(root: Path) -> dict[str, dict[str, Any]]:
    records = {}
    for folder in sorted(p for p in root.glob("cells/*") if p.is_dir()):
        record = read(folder, "record.json")
        if record is not None:
            records[record["label"]] = {**record, "curves": read(folder, "curves.json") or record.get("curves")}
    return records


def is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def differences(a: Any, b: Any, where: str) -> list[str]:
    """Paths where two JSON values differ (floats compared exactly; NaN equals NaN and null)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in {'first' if k in a else 'second'}" for k in sorted(set(a) ^ set(b))]
        for key in sorted(set(a) & set(b)):
            out += differences(a[key], b[key], f"{where}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    if a == b or (is_missing(a) and is_missing(b)):
        return []
    return [f"{where}: {a!r} != {b!r}"]


def main(first: str, second: str) -> int:
    a, b = load(Path(first)), load(Path(second))
    diffs = [f"{label}: only in {first if label in a else second}" for label in sorted(set(a) ^ set(b))]
    for label in sorted(set(a) & set(b)):
        for field in COMPARED:
            diffs += differences(a[label].get(field), b[label].get(field), f"{label} {field}")
    statuses: dict[str, int] = {}
    for label in set(a) & set(b):
        record = a[label]
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    print(f"{len(set(a) & set(b))} cells compared ({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))}); "
          f"fields {', '.join(COMPARED)}: {len(diffs)} differences")
    print("\n".join(diffs[:50]) + (f"\n... {len(diffs) - 50} more" if len(diffs) > 50 else ""))
    return int(bool(diffs))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
