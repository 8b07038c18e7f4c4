"""Where a cell's time goes: one cell of a preset run under torch.profiler, its operators by self CPU time.

The cell is the one ``benchbackcompat run`` would compute (the preset's data, models and precision; ``--set`` options as
on the command line, e.g. fewer epochs for a shorter profile), in a temporary results folder, so shared models are
trained too. Prints the profiler's table of the top operators and the share of the cell's wall time the profiled
operators account for (the rest is Python: the training loop, the method's loss code, data indexing).

    python benchmarks/profile_cell.py [--preset quick] [--scenario both] [--method hbct] [--set train.epochs=4] [--top 15]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time

import torch
from torch.profiler import ProfilerActivity, profile

from benchbackcompat import BenchError
from benchbackcompat.tooling import (
    Acceleration,
    CellRunner,
    ResultStore,
    assign_fingerprints,
    create_method,
    plan_grid,
    resolve_device,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--scenario", default="both")
    parser.add_argument("--method", default="hbct")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--top", type=int, default=15, help="operators listed")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    try:
        plan = plan_grid(args.preset, args.scenario, args.method, [args.seed], assignments=args.assignments)
        device = resolve_device(args.device)
        data_of = assign_fingerprints(plan, device)
    except BenchError as error:
        raise SystemExit(f"error: {error}") from None
    cell = plan.cells[0]
    method = create_method(args.method, cell.params)
    with tempfile.TemporaryDirectory() as folder:
        runner = CellRunner(cell, method, data_of(cell.scenario.config), ResultStore(folder), device,
                            acceleration=Acceleration.resolve("auto", False, device))
        started = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU]) as profiled, contextlib.redirect_stderr(io.StringIO()):
            outcome = runner.run()
        wall = time.perf_counter() - started
    averages = profiled.key_averages()
    total = sum(event.self_cpu_time_total for event in averages) / 1e6
    print(f"{cell.label}: {wall:.1f} s under the profiler ({torch.get_num_threads()} threads, "
          f"{runner.precision_used()}); timings {({k: round(v, 1) for k, v in outcome['timings'].items() if k.endswith('_s') and isinstance(v, float)})}")
    print(f"operators' self CPU time: {total:.1f} s ({100 * total / wall:.0f}% of the wall time; the rest is Python "
          "and waiting)\n")
    print(averages.table(sort_by="self_cpu_time_total", row_limit=args.top, max_name_column_width=40))


if __name__ == "__main__":
    main()
