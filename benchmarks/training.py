"""HOC training throughput against a conventional pipeline built to the official iamcl2r recipe.

Workload (the IAM-CL2R fine-tuning step of CVPR 2024's official code): one d-Simplex-HOC fine-tuning step, ResNet-18 with the ImageNet
stem, 32x32 images, batch 128, 10 new classes x 300 images, the previous model frozen as the
reference (its features computed once per batch, under no_grad), SGD.

- ``official``: the iamcl2r recipe on a CPU: a Dataset of PIL images transformed one at a time
  (Resize 32, RandomCrop 32 pad 4, RandomHorizontalFlip, ToTensor, Normalize), a DataLoader with
  ``num_workers`` worker processes, fp32, the same model and the same loss code.
- ``ours``: the harness's own training loop (``benchbackcompat.tooling.train_model``): uint8 images resident
  on the device, vectorised augmentation, with the speed options given per variant.

Every variant runs ``--batches`` batches (after one untimed warm-up epoch of 2 batches) and reports
images/s of the whole loop; variants are interleaved and repeated ``--repeats`` times, the table
gives the median and the spread (min-max), the arithmetic rate (FLOPs of one training step counted with
torch.utils.flop_counter, times the median rate) against ``--peak`` where given, and the peak resident memory.
``ours-auto`` trains in the precision ``train.amp = "auto"`` chooses on this machine (measured once, untimed, not
cached; its choice and rates are printed).

    python benchmarks/training.py [--batches 8] [--repeats 3] [--variants official-w0,ours,ours-cl,...]
                                  [--peak FP32,BF16]   # the cores' peak GFLOP/s, e.g. 166,333 on 2 Zen 4 cores at 2.6 GHz
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import io
import resource
import statistics
import sys
import time
from collections.abc import Callable

import torch
from PIL import Image
from tabulate import tabulate
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from benchbackcompat.scenarios import CL2R
from benchbackcompat.data import ImageArrays
from benchbackcompat.method import Batch, StepContext, frozen_copy
from benchbackcompat.tooling import (
    Acceleration,
    AutoPrecision,
    Workload,
    create_method,
    make_optimizer,
    train_model,
)

MEAN, STD = (0.5071, 0.4867, 0.4408), (0.2675, 0.2565, 0.2761)  # the iamcl2r code's CIFAR statistics
CLASSES, PER_CLASS = 10, 300
BATCH = [128]  # --batch
BACKBONE = ["resnet18-imagenet"]  # --backbone


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def workload(images: int, amp: str = "off") -> tuple[object, StepContext]:
    """The HOC method and the context of its second step (classes 10..19), old model frozen."""
    scenario = CL2R(num_tasks=2, initial_class_fraction=0.5, memory_per_class=0,
                    model={"backbone": BACKBONE[0], "embedding_dim": None},
                    train={"epochs": 1, "batch_size": BATCH[0], "lr": 1e-3, "amp": amp})
    steps = scenario.steps(2 * CLASSES)
    method = create_method("hoc")
    gen = torch.Generator().manual_seed(0)
    data = ImageArrays(torch.randint(0, 256, (images, 3, 32, 32), dtype=torch.uint8, generator=gen),
                       CLASSES + torch.arange(images) % CLASSES)
    ctx = StepContext(scenario=scenario, step=steps[1], steps=steps, train=scenario.train_config(1),
                      device=torch.device("cpu"), old_model=None, train_data=data, memory=None, mean=MEAN, std=STD,
                      image_size=32, seed=0)
    torch.manual_seed(0)
    old = method.build_model(ctx, BACKBONE[0], 2 * CLASSES)
    ctx.old_model = frozen_copy(old)
    return method, ctx


def new_model(method, ctx: StepContext):
    torch.manual_seed(1)
    return method.build_model(ctx, BACKBONE[0], 2 * CLASSES)


class PILImages(Dataset):
    """CIFAR as torchvision serves it: uint8 arrays, one PIL image per item, per-image transforms."""

    def __init__(self, data: ImageArrays) -> None:
        self.images = data.images.permute(0, 2, 3, 1).numpy()
        self.labels = data.labels.tolist()
        self.transform = transforms.Compose([
            transforms.Resize(32), transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(),
            transforms.ToTensor(), transforms.Normalize(MEAN, STD),
        ])

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        return self.transform(Image.fromarray(self.images[i])), self.labels[i]


def official(batches: int, workers: int) -> float:
    """Images/s of the conventional loop: DataLoader + PIL transforms, fp32, the method's loss, SGD."""
    method, ctx = workload(BATCH[0] * (batches + 2))
    model = new_model(method, ctx).train()
    optimizer = make_optimizer(model, ctx.train)
    loader = DataLoader(PILImages(ctx.train_data), batch_size=BATCH[0], shuffle=True, drop_last=True, num_workers=workers,
                        generator=torch.Generator().manual_seed(0))
    started = None
    for b, (x, y) in enumerate(loader):
        if b == 2:  # the first two batches warm up (worker start, oneDNN primitives)
            started = time.perf_counter()
        loss = method.loss(model, Batch(x, y, torch.zeros(len(y), dtype=torch.bool)), ctx)["loss"]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return BATCH[0] * batches / (time.perf_counter() - started)


def ours(batches: int, amp: str = "off", channels_last: bool = False, compile: bool = False) -> float:
    """Images/s of the harness's training loop (one epoch of ``batches`` batches after a 2-batch warm-up epoch)."""
    method, ctx = workload(BATCH[0] * 2, amp)
    model = new_model(method, ctx)
    acceleration = Acceleration(channels_last, compile)
    timed = copy.copy(ctx)
    timed.train_data = workload(BATCH[0] * batches, amp)[1].train_data
    with contextlib.redirect_stderr(io.StringIO()):  # no progress bars
        train_model(model, method, ctx, seed=0, acceleration=acceleration)  # warm-up (and compilation)
        started = time.perf_counter()
        train_model(model, method, timed, seed=1, acceleration=acceleration)
    return BATCH[0] * batches / (time.perf_counter() - started)


AUTO = AutoPrecision(cache=None)  # measured in this process, not cached


def auto_amp(channels_last: bool) -> str:
    """What ``amp = "auto"`` chooses for this workload here (``bf16`` or ``off``)."""
    workload = Workload(BACKBONE[0], 32, BATCH[0], channels_last=channels_last)
    return AUTO.resolve("auto", torch.device("cpu"), workload)


def step_gflop_per_image(amp: str) -> float:
    """FLOPs of one training step of the workload per image: the new model's forward and backward, the frozen old
    model's forward (torch.utils.flop_counter counts matrix products and convolutions)."""
    from torch.utils.flop_counter import FlopCounterMode

    from benchbackcompat.tooling import autocast

    method, ctx = workload(BATCH[0], amp)
    model = new_model(method, ctx).train()
    images = ctx.train_data.images.float() / 255
    with FlopCounterMode(display=False) as counter, autocast(ctx.device, amp):
        loss = method.loss(model, Batch(images, ctx.train_data.labels, torch.zeros(BATCH[0], dtype=torch.bool)), ctx)
    with FlopCounterMode(display=False) as backward:
        loss["loss"].backward()
    return (counter.get_total_flops() + backward.get_total_flops()) / BATCH[0] / 1e9


VARIANTS: dict[str, tuple[str, Callable[[int], float]]] = {
    "official-w0": ("official recipe, DataLoader num_workers=0, fp32", lambda n: official(n, 0)),
    "official-w2": ("official recipe, DataLoader num_workers=2, fp32", lambda n: official(n, 2)),
    "ours": ("ours, fp32", lambda n: ours(n)),
    "ours-cl": ("ours, fp32, channels-last", lambda n: ours(n, channels_last=True)),
    "ours-bf16": ("ours, bf16 autocast", lambda n: ours(n, amp="bf16")),
    "ours-bf16-cl": ("ours, bf16 autocast, channels-last", lambda n: ours(n, amp="bf16", channels_last=True)),
    "ours-auto": ("ours, amp auto (as measured here), channels-last",
                  lambda n: ours(n, amp=auto_amp(True), channels_last=True)),
    "ours-compile": ("ours, fp32, torch.compile (compilation untimed)", lambda n: ours(n, compile=True)),
    "ours-bf16-cl-compile": ("ours, bf16 autocast, channels-last, torch.compile (compilation untimed)",
                             lambda n: ours(n, amp="bf16", channels_last=True, compile=True)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=8, help="timed batches per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repetitions (median reported)")
    parser.add_argument("--variants", default="official-w0,official-w2,ours,ours-cl,ours-bf16,ours-bf16-cl",
                        help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--backbone", default=BACKBONE[0], help="another backbone for a cheaper workload (convnet-s)")
    parser.add_argument("--batch", type=int, default=BATCH[0], help="batch size (the quick preset trains with 64)")
    parser.add_argument("--peak", help="FP32,BF16: the peak GFLOP/s of the cores used, for the fraction-of-peak column")
    args = parser.parse_args()
    BACKBONE[0], BATCH[0] = args.backbone, args.batch
    if args.threads:
        torch.set_num_threads(args.threads)
    names = args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        sys.exit(f"error: unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    print(f"{args.backbone}, torch {torch.__version__}, {torch.get_num_threads()} threads; batch {BATCH[0]}, {args.batches} timed batches, "
          f"{args.repeats} interleaved repeats", flush=True)
    rates: dict[str, list[float]] = {n: [] for n in names}
    for repeat in range(args.repeats):
        for name in names:
            rates[name].append(VARIANTS[name][1](args.batches))
            print(f"  repeat {repeat}: {name} {rates[name][-1]:.1f} img/s", file=sys.stderr, flush=True)
    if "ours-auto" in names:
        choice = auto_amp(True)
        print(f"amp auto chose {'bf16 autocast' if choice == 'bf16' else 'fp32'}: "
              f"{next(iter(AUTO._known.values())).describe()} in its own timing")
    peaks = [float(p) for p in args.peak.split(",")] if args.peak else None
    gflop = {amp: step_gflop_per_image(amp) for amp in ("off", "bf16")}
    base = statistics.median(rates[names[0]])
    rows = []
    for name, r in rates.items():
        bf16 = "bf16" in VARIANTS[name][0] or (name == "ours-auto" and auto_amp(True) == "bf16")
        achieved = gflop["bf16" if bf16 else "off"] * statistics.median(r)
        of_peak = f"{100 * achieved / peaks[1 if bf16 else 0]:.1f}% of {'bf16' if bf16 else 'fp32'}" if peaks else "-"
        rows.append([name, VARIANTS[name][0], f"{statistics.median(r):.1f}", f"{min(r):.1f}-{max(r):.1f}",
                     f"{statistics.median(r) / base:.2f}x", f"{achieved:.1f}", of_peak])
    print(tabulate(rows, headers=["variant", "pipeline", "img/s (median)", "range", f"vs {names[0]}", "GFLOP/s",
                                  "of peak"], tablefmt="github"))
    print(f"\none training step: {gflop['off']:.3f} GFLOP per image (fwd + bwd of the new model, fwd of the old one)")
    print(f"\npeak resident memory of the process: {peak_rss_mb():,.0f} MB")


if __name__ == "__main__":
    main()
