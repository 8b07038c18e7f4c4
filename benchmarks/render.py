"""Rendering the published leaderboard, timed as a reader runs it: `benchbackcompat leaderboard --results
leaderboard/records --claims FILE ... --out DIR --verified-only`, first with an empty figure cache (cold: every figure
drawn), then again with the cache that run filled (warm: the figures copied), each in a fresh output folder; wall and
CPU time per run. The runs get a home folder of their own, so the user's cache is neither read nor filled.

    python benchmarks/render.py [--claims studies/cpu-scale/claims/hbct.toml] [--repeats 1]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from child_time import run_timed

ROOT = Path(__file__).resolve().parents[1]


def timed(home: Path, claims: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one rendering with ``home`` as the home folder (its figure cache)."""
    with tempfile.TemporaryDirectory() as out:
        command = ["benchbackcompat", "leaderboard", "--results", str(ROOT / "leaderboard" / "records"),
                   *(arg for path in claims for arg in ("--claims", path)), "--out", str(Path(out) / "board"),
                   "--verified-only", "--quiet"]
        return run_timed(command, {**os.environ, "HOME": str(home)}, ROOT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", action="append", default=None, help="a claims file (repeatable)")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    claims = args.claims or [str(ROOT / "studies" / "cpu-scale" / "claims" / "hbct.toml")]
    found: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as home:
            for state in found:
                found[state].append(timed(Path(home), claims))
                wall, cpu = found[state][-1]
                print(f"run {repeat + 1}, {state} figure cache: {wall:.1f} s wall, {cpu:.1f} s CPU", file=sys.stderr)
    print("| figure cache | wall s (min-max) | CPU s |\n|---|---|---|")
    for state, runs in found.items():
        walls = [w for w, _ in runs]
        print(f"| {state} | {min(walls):.1f}-{max(walls):.1f} | {min(c for _, c in runs):.1f} |")


if __name__ == "__main__":
    main()
