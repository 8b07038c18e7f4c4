"""Data-parallel training of one cell over several processes (``torchrun``), with torch.distributed.

Every rank holds the device-resident data, draws the same batch indices and augmentation (same
seeds), and trains on its own slice of each batch; gradients are averaged with one bucketed
all-reduce after every backward, which is what DistributedDataParallel does. The explicit
all-reduce is used instead of the DDP wrapper because methods call parts of the model
(``model.embed``, the head) and frozen old models outside the wrapper's ``forward``, which the DDP
reducer does not allow. With batch norm on CPU each rank normalises its own slice (SyncBatchNorm
needs CUDA; on CUDA it is used), so results match a single process within a tolerance, not bitwise.
Rank 0 writes checkpoints and records; decisions that read the store are taken by rank 0 and
broadcast, so that all ranks take the same path.
"""
from __future__ import annotations

import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

from benchbackcompat.store import ResultStore
from benchbackcompat.record import CellRecord, RecordBase


def active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if active() else 0


def is_main() -> bool:
    return rank() == 0


def initialise_from_environment(device: str | None) -> None:
    """Join the process group that ``torchrun`` describes in the environment (no-op for one process)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return
    cuda = torch.cuda.is_available() and device != "cpu"
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo")


def shard(tensor: Tensor) -> Tensor:
    """This rank's slice of a batch (every world_size-th sample)."""
    return tensor[rank() :: dist.get_world_size()] if active() else tensor


def prepare_model(model: nn.Module) -> nn.Module:
    """SyncBatchNorm on CUDA when several ranks train; unchanged otherwise."""
    if active() and next(model.parameters()).is_cuda:
        return nn.SyncBatchNorm.convert_sync_batchnorm(model)
    return model


def average_gradients(model: nn.Module) -> None:
    """Average the gradients of ``model`` over the ranks (one all-reduce of the flattened gradients)."""
    if not active():
        return
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return
    flat = _flatten_dense_tensors(grads)
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    for grad, reduced in zip(grads, _unflatten_dense_tensors(flat, grads)):
        grad.copy_(reduced)


def all_finite(loss: Tensor) -> bool:
    """Whether the loss is finite on every rank (so that all ranks stop together when one diverges)."""
    finite = torch.isfinite(loss.detach()).to(torch.float32).reshape(1)
    if active():
        dist.all_reduce(finite, op=dist.ReduceOp.MIN)
    return bool(finite.item())


def agreed(flag: bool) -> bool:
    """Rank 0's ``flag`` on every rank."""
    if not active():
        return flag
    value = torch.tensor([float(flag)], device="cuda" if dist.get_backend() == "nccl" else "cpu")
    dist.broadcast(value, 0)
    return bool(value.item())


class RankStore(ResultStore):
    """The results store seen by one rank: rank 0 reads, writes and locks; the other ranks read what
    rank 0 decided to read and write nothing."""

    def load(self, path: Path, device: torch.device) -> dict[str, Any] | None:  # type: ignore[override]
        found = ResultStore.load(path, device) if is_main() else None
        if not agreed(found is not None):
            return None
        return found if is_main() else ResultStore.load(path, device)

    def save(self, path: Path, payload: dict[str, Any]) -> None:  # type: ignore[override]
        if is_main():
            ResultStore.save(path, payload)

    def write_record(self, key: str, record: RecordBase | dict[str, Any]) -> Path:
        return super().write_record(key, record) if is_main() else self.record_path(key)

    def record(self, key: str) -> CellRecord | None:
        found = super().record(key) if is_main() else None
        if not agreed(found is not None):
            return None
        return found if is_main() else super().record(key)

    def cell_lock(self, key: str, *, blocking: bool = True, label: str | None = None):
        return super().cell_lock(key, blocking=True, label=label) if is_main() else nullcontext(True)

    def model_lock(self, key: str):
        return super().model_lock(key) if is_main() else nullcontext(True)
