"""The training loop of one model at one step: device-resident data, device-side augmentation."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from benchbackcompat.config import TrainConfig
from benchbackcompat.data.augment import augment
from benchbackcompat.engine import distributed
from benchbackcompat.engine.device import autocast
from benchbackcompat.runtime.seeds import generator
from benchbackcompat.runtime.faults import fault_point, is_out_of_memory
from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.logs import log, progress_bar
from benchbackcompat.method import Batch, Method, StepContext, batches_per_epoch

EpochObserver = Callable[[int, dict[str, float]], None]


class DivergedError(RuntimeError):
    """The loss, the weights after an epoch or the features at evaluation became NaN or Inf; the cell stops
    and is recorded as diverged."""

    def __init__(self, step: int, epoch: int | None, batch: int | None, last_finite: float | None,
                 what: str = "loss") -> None:
        self.step, self.epoch, self.batch, self.last_finite = step, epoch, batch, last_finite
        last = "none (the first batch)" if last_finite is None else f"{last_finite:.6g}"
        where = f"step {step}" + (f", epoch {epoch}" if epoch is not None else "") + (
            f", batch {batch}" if batch is not None else "")
        super().__init__(f"{what} diverged (NaN/Inf) at {where}; last finite loss {last}")


def nonfinite_weights(model: nn.Module) -> list[str]:
    """Names of the floating-point parameters and buffers of ``model`` holding NaN or Inf (one sync)."""
    named = [(n, t) for n, t in (*model.named_parameters(), *model.named_buffers()) if t.is_floating_point()]
    if not named:
        return []
    finite = torch.stack([torch.isfinite(t).all() for _, t in named]).tolist()
    return [name for (name, _), ok in zip(named, finite) if not ok]


class TrainingOutOfMemory(BenchError):
    """The device ran out of memory during training; the cell fails (a smaller batch would change the results)."""


def names_batch_size_on_oom(train: Callable[..., list[dict[str, float]]]) -> Callable[..., list[dict[str, float]]]:
    """Turn an out-of-memory error of ``train(model, method, ctx, ...)`` into a one-line TrainingOutOfMemory."""

    @functools.wraps(train)
    def wrapper(model: nn.Module, method: Method, ctx: StepContext, *args, **kwargs) -> list[dict[str, float]]:
        try:
            return train(model, method, ctx, *args, **kwargs)
        except (RuntimeError, MemoryError) as error:
            if not (isinstance(error, MemoryError) or is_out_of_memory(error)):
                raise
            size = ctx.train.batch_size
            raise TrainingOutOfMemory(
                f"out of {ctx.device.type} memory training step {ctx.step.index} at batch size {size} "
                f"({str(error).splitlines()[0][:100]}); lower it, e.g. --set train.batch_size={max(2, size // 2)}"
            ) from None

    return wrapper


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """SGD or AdamW; no weight decay on biases and normalisation parameters (1-d tensors)."""
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        raise BenchError("the model has no trainable parameters")
    groups = [
        {"params": [p for _, p in trainable if p.dim() > 1], "weight_decay": cfg.weight_decay},
        {"params": [p for _, p in trainable if p.dim() <= 1], "weight_decay": 0.0},
    ]
    groups = [g for g in groups if g["params"]]
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, nesterov=cfg.nesterov and cfg.momentum > 0)
    return torch.optim.AdamW(groups, lr=cfg.lr)


def lr_factor(cfg: TrainConfig, iteration: int, per_epoch: int) -> float:
    """Multiplier of the base lr at ``iteration``: linear warm-up, then cosine, multistep or constant."""
    warmup = cfg.warmup_epochs * per_epoch
    if iteration < warmup:
        return (iteration + 1) / warmup
    epoch = iteration / per_epoch
    if cfg.schedule == "constant":
        return 1.0
    if cfg.schedule == "multistep":
        return cfg.gamma ** sum(epoch >= m for m in cfg.milestones)
    total = max(1, cfg.epochs * per_epoch - warmup)
    progress = min(1.0, (iteration - warmup) / total)
    floor = cfg.min_lr / cfg.lr
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def batch_indices(n_new: int, n_memory: int, cfg: TrainConfig, gen: torch.Generator) -> Iterator[tuple[Tensor, Tensor]]:
    """Index batches of one epoch: (new-data indices, memory indices).

    Without memory: a random permutation cut into full batches (``drop_last``). With memory
    (CL2R/IAM-CL2R): ``(n_new + n_memory) // batch`` batches, each half memory and half new data,
    both drawn from per-epoch permutations that wrap around when exhausted.
    """
    size = min(cfg.batch_size, n_new + n_memory)
    if n_memory == 0:
        order = torch.randperm(n_new, generator=gen)
        for start in range(0, n_new - size + 1, size):
            yield order[start : start + size], order[:0]
        return
    batches = max(1, (n_new + n_memory) // size)
    half = size // 2
    new_order = _cycled(torch.randperm(n_new, generator=gen), batches * (size - half))
    mem_order = _cycled(torch.randperm(n_memory, generator=gen), batches * half)
    for b in range(batches):
        yield new_order[b * (size - half) : (b + 1) * (size - half)], mem_order[b * half : (b + 1) * half]


def _cycled(order: Tensor, length: int) -> Tensor:
    return order.repeat(math.ceil(length / len(order)))[:length]


@dataclass(frozen=True)
class Acceleration:
    """Speed options that leave the method's arithmetic unchanged (up to rounding)."""

    channels_last: bool = False  # NHWC weights and inputs: oneDNN's fast layout on CPU, tensor cores on CUDA
    compile: bool = False  # torch.compile the backbone for training

    @classmethod
    def resolve(cls, channels_last: str, compile: bool, device: torch.device) -> Acceleration:
        """``channels_last``: auto (on CUDA and CPU, where oneDNN's pooling and convolutions prefer NHWC: in fp32 on 2
        CPU cores convnet-m trains 1.4x and ResNet-18 1.06x as fast, see benchmarks/training.py), on or off."""
        return cls(channels_last == "on" or (channels_last == "auto" and device.type in ("cuda", "cpu")), compile)


@names_batch_size_on_oom
def train_model(
    model: nn.Module,
    method: Method,
    ctx: StepContext,
    *,
    seed: int,
    observer: EpochObserver | None = None,
    desc: str = "train",
    acceleration: Acceleration = Acceleration(),
    step_modules: Sequence[nn.Module] = (),
) -> list[dict[str, float]]:
    """Train ``model`` in place for ``ctx.train.epochs`` epochs; returns the per-epoch means of the loss terms.
    ``step_modules`` (a method's adapters, discriminators, ...) are trained with it, after its parameters."""
    cfg, device = ctx.train, ctx.device
    if acceleration.channels_last:  # the frozen references too: their forward takes the same NHWC batches
        for module in (model, ctx.old_model, ctx.align_to):
            if module is not None:
                module.to(memory_format=torch.channels_last)
    if acceleration.compile:
        model.backbone.compile()  # in place: parameter names (and checkpoints) are unchanged
        try:
            return train_model.__wrapped__(model, method, ctx, seed=seed, observer=observer, desc=desc,
                                           step_modules=step_modules,
                                           acceleration=Acceleration(acceleration.channels_last, False))
        finally:
            model.backbone._compiled_call_impl = None  # evaluation and frozen copies use the plain module
    data, memory = ctx.train_data, ctx.memory
    n_memory = len(memory) if (ctx.step.replay and memory is not None) else 0
    per_epoch = batches_per_epoch(len(data), n_memory, cfg.batch_size)
    trainable = nn.ModuleList([model, *step_modules]) if step_modules else model
    distributed.prepare_model(trainable)  # SyncBatchNorm across ranks on CUDA (in place)
    optimizer = make_optimizer(trainable, cfg)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda it: lr_factor(cfg, it, per_epoch))
    gen = generator(seed)
    aug_gen = generator(seed + 1, device)
    history: list[dict[str, float]] = []
    last_finite: float | None = None
    trainable.train()
    epochs = progress_bar(range(cfg.epochs), desc=desc, unit="epoch", leave=False, disable=not distributed.is_main())
    for epoch in epochs:
        sums: dict[str, float] = {}
        count = 0
        for b, (new_idx, mem_idx) in enumerate(batch_indices(len(data), n_memory, cfg, gen)):
            fault_point("train-batch")
            images = data.images[new_idx.to(device)]
            labels = data.labels[new_idx.to(device)]
            from_memory = torch.zeros(len(new_idx), dtype=torch.bool, device=device)
            if n_memory:
                images = torch.cat([images, memory.images[mem_idx.to(device)]])
                labels = torch.cat([labels, memory.labels[mem_idx.to(device)]])
                from_memory = torch.cat([from_memory, torch.ones(len(mem_idx), dtype=torch.bool, device=device)])
            inputs = _prepare(images, ctx, aug_gen)  # the whole batch on every rank, then this rank's slice
            if acceleration.channels_last:
                inputs = inputs.contiguous(memory_format=torch.channels_last)
            inputs, labels, from_memory = (distributed.shard(t) for t in (inputs, labels, from_memory))
            with autocast(device, cfg.amp):
                terms = method.loss(model, Batch(inputs, labels, from_memory), ctx)
            loss = terms["loss"]
            if not distributed.all_finite(loss):
                raise DivergedError(ctx.step.index, epoch, b, last_finite)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            distributed.average_gradients(trainable)
            sums["lr"] = sums.get("lr", 0.0) + optimizer.param_groups[0]["lr"]  # the rate this batch is trained at
            optimizer.step()
            scheduler.step()
            last_finite = float(loss.detach())
            for key, value in terms.items():
                sums[key] = sums.get(key, 0.0) + float(value.detach())
            count += 1
        broken = nonfinite_weights(model)  # the last updates of an epoch are never checked through the loss
        if broken:  # the same on every rank (averaged gradients, same updates)
            raise DivergedError(ctx.step.index, epoch, None, last_finite,
                                what=f"weights ({', '.join(broken[:3])}{', ...' if len(broken) > 3 else ''})")
        means = {k: v / max(count, 1) for k, v in sums.items()}  # lr: the mean rate of the epoch's batches
        history.append(means)
        epochs.set_postfix(loss=f"{means.get('loss', float('nan')):.3f}")
        log.debug(f"{desc} epoch {epoch + 1}/{cfg.epochs}: " + ", ".join(f"{k} {v:.4g}" for k, v in means.items()))
        if observer is not None:
            observer(epoch, means)
    model.eval()
    return history


def _prepare(images: Tensor, ctx: StepContext, gen: torch.Generator) -> Tensor:
    cfg = ctx.train
    pad = cfg.crop_padding if cfg.augment else 0
    flip = cfg.flip and cfg.augment
    return augment(images, mean=ctx.mean, std=ctx.std, generator=gen, pad=pad, flip=flip)
