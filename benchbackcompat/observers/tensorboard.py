"""TensorBoard observer (optional extra ``benchbackcompat[tensorboard]``): training curves and per-step
accuracies of every cell, written under ``<results>/tensorboard/<scenario>/<method>/seed<N>``.

Registered like any observer plugin, through the entry point ``tensorboard = benchbackcompat.observers.
tensorboard:create`` of group ``benchbackcompat.observers``; another logger (e.g. Weights & Biases) is a
package with the same two hook implementations and its own entry point.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchbackcompat.hookspecs import hookimpl
from benchbackcompat.record import parse_record


class TensorBoardObserver:
    """One ``SummaryWriter`` per cell: ``step-<t>/<term>`` per epoch while training, then ``accuracy/<metric>/self``
    (C[t][t]) and ``accuracy/<metric>/AA_tau`` over t, and the final metrics, when the cell finishes."""

    def __init__(self, logdir: Path, writer_factory: Callable[..., Any]) -> None:
        self.logdir = Path(logdir)
        self.writer_factory = writer_factory
        self.writers: dict[str, Any] = {}

    def writer(self, cell: str) -> Any:
        if cell not in self.writers:
            self.writers[cell] = self.writer_factory(log_dir=str(self.logdir.joinpath(*map(safe_part, cell.split("/")))))
        return self.writers[cell]

    @hookimpl
    def bbc_on_log(self, cell: str, step: int, epoch: int, values: dict[str, float]) -> None:
        writer = self.writer(cell)
        for name, value in values.items():
            writer.add_scalar(f"step-{step}/{name}", value, epoch)

    @hookimpl
    def bbc_on_cell_finished(self, record: dict[str, Any]) -> None:
        finished = parse_record(record)
        writer = self.writer(finished.label)
        for metric, matrix in getattr(finished, "matrices", {}).items():
            summary = finished.metrics[metric]
            for t, row in enumerate(matrix):
                writer.add_scalar(f"accuracy/{metric}/self", row[t], t + 1)
            for tau, value in enumerate(summary.AA_curve or [], 1):
                writer.add_scalar(f"accuracy/{metric}/AA_tau", value, tau)
            for name, value in summary.scalars().items():
                if value is not None:
                    writer.add_scalar(f"final/{metric}/{name}", value, 0)
        writer.close()
        del self.writers[finished.label]


def create(results: Path) -> TensorBoardObserver | None:
    """The observer for a run writing to ``results``; None when TensorBoard is not installed."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return TensorBoardObserver(Path(results) / "tensorboard", SummaryWriter)


def safe_part(name: str) -> str:
    """One path component that stays inside the log folder: other characters become "_", "." and ".." are refused."""
    part = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    return part if part.strip(".") else part.replace(".", "_") or "_"
