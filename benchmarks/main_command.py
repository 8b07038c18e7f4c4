"""The README's main command, timed as a user runs it: `benchbackcompat run --scenario both --methods hbct,hoc` in a
fresh results folder each time (the dataset cache and the precision choice warm), variants side by side and
interleaved, each run's wall and CPU time (the children's user + system time).

Variants: ``auto`` (the default, ``--workers auto``: here one process of one thread per cell), ``workers-1`` (one
process on every thread), ``workers-2`` (``--workers 2``: the cells in two processes of one thread each), and each of
them with ``-avx2`` (torch's and oneDNN's kernels held to AVX2, as on a processor without AVX-512:
``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2``).

    python benchmarks/main_command.py [--variants auto,workers-1,auto-avx2,workers-1-avx2] [--repeats 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from child_time import run_timed

COMMAND = ["benchbackcompat", "run", "--scenario", "both", "--methods", "hbct,hoc", "--quiet"]
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
VARIANTS = tuple(f"{workers}{isa}" for isa in ("", "-avx2") for workers in ("auto", "workers-1", "workers-2"))
DEFAULT_VARIANTS = "auto,workers-1,auto-avx2,workers-1-avx2"


def variant_command(variant: str, out: Path) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of ``variant``."""
    if variant not in VARIANTS:
        raise SystemExit(f"error: unknown variant {variant!r}; expected some of {', '.join(VARIANTS)}")
    workers = variant.removesuffix("-avx2").removeprefix("workers-")
    env = {**os.environ, **(AVX2 if variant.endswith("-avx2") else {})}
    return [*COMMAND, "--out", str(out), "--workers", workers], env


def timed(variant: str) -> tuple[float, float]:
    """(wall s, CPU s) of one run of ``variant`` in a fresh results folder."""
    with tempfile.TemporaryDirectory() as folder:
        return run_timed(*variant_command(variant, Path(folder) / "results"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=DEFAULT_VARIANTS)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    variants = args.variants.split(",")
    found: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for repeat in range(args.repeats):
        for variant in variants:
            found[variant].append(timed(variant))
            wall, cpu = found[variant][-1]
            print(f"run {repeat + 1}, {variant}: {wall:.1f} s wall, {cpu:.1f} s CPU", file=sys.stderr)
    print("| variant | wall s (median, range) | CPU s (median) |\n|---|---|---|")
    for variant, runs in found.items():
        walls = [w for w, _ in runs]
        print(f"| {variant} | {statistics.median(walls):.1f} ({min(walls):.1f}-{max(walls):.1f}) | "
              f"{statistics.median(c for _, c in runs):.1f} |")


if __name__ == "__main__":
    main()
