"""Speed of the harness, measured side by side in one run (a benchmark, not a test).

1. Training throughput (images/s) of every built-in backbone with our pipeline (uint8 images
   resident on the device, augmentation there, bf16 autocast on CUDA, ``--amp``) and with a conventional
   torchvision pipeline (Dataset of PIL images, per-image RandomCrop/Flip/ToTensor/Normalize,
   DataLoader) at the same batch size; the ratio is the figure.
2. The time to evaluate a T-task compatibility matrix for growing T: each model is extracted
   once (T passes), the T(T+1)/2 entries are similarity computations, so the time grows
   linearly in extraction work. The official code's per-entry re-extraction is timed for the
   smaller T as a comparison.
3. Peak memory of each measurement (GPU: max allocated; CPU: peak resident set of the process).
4. On CUDA: the achieved fraction of the GPU's peak bf16 arithmetic for ResNet-18 at batch 128
   and 512 (FLOPs counted with torch.utils.flop_counter).

    python benchmarks/throughput.py [--device auto|cpu|cuda] [--quick]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from PIL import Image
from tabulate import tabulate
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from benchbackcompat.data import ImageArrays, augment, normalise
from benchbackcompat.method import StandardMethod
from benchbackcompat.models import build_network, list_backbones
from benchbackcompat.tooling import (
    ModelFeatures,
    ScenarioData,
    autocast,
    compatibility_matrices,
    extract_features,
    resolve_device,
)

MEAN, STD = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)
AMP = ["bf16"]  # --amp: the precision of every training step timed here
# dense bf16 tensor-core peak (TFLOP/s) of common data-centre GPUs, from the vendors' data sheets
PEAK_BF16_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0, "V100": 125.0}


def synthetic_images(n: int, classes: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=gen), torch.arange(n) % classes


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss_kb / 1024 if sys.platform != "darwin" else rss_kb / 2**20


def synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, images: torch.Tensor, labels: torch.Tensor,
               device: torch.device) -> None:
    with autocast(device, AMP[0]):
        loss = F.cross_entropy(model(images).logits, labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def timed(run: Callable[[int], None], batches: int, warmup: int, device: torch.device) -> float:
    """Seconds for ``batches`` calls of ``run(b)`` after ``warmup`` untimed ones."""
    for b in range(warmup):
        run(b)
    synchronise(device)
    started = time.perf_counter()
    for b in range(batches):
        run(warmup + b)
    synchronise(device)
    return time.perf_counter() - started


def make_model(backbone: str, classes: int, device: torch.device, channels_last: bool) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = build_network(backbone, num_classes=classes, embedding_dim=None).to(device).train()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def ours(backbone: str, images: torch.Tensor, labels: torch.Tensor, batch: int, batches: int, device: torch.device) -> float:
    """Images/s: uint8 data on the device, vectorised augmentation there."""
    model, optimizer = make_model(backbone, int(labels.max()) + 1, device, channels_last=device.type == "cuda")
    data, targets = images.to(device), labels.to(device)
    gen = torch.Generator(device=device).manual_seed(0)
    order = torch.randperm(len(data), device=device, generator=gen)

    def run(b: int) -> None:
        index = order[(b * batch) % len(data):][:batch]
        inputs = augment(data[index], mean=MEAN, std=STD, generator=gen)
        if device.type == "cuda":
            inputs = inputs.contiguous(memory_format=torch.channels_last)
        train_step(model, optimizer, inputs, targets[index], device)

    return batch * batches / timed(run, batches, warmup=2, device=device)


class PILDataset(Dataset):
    """A conventional image dataset: PIL images transformed one at a time (as torchvision's CIFAR)."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor) -> None:
        self.images = images.permute(0, 2, 3, 1).numpy()
        self.labels = labels.tolist()
        self.transform = transforms.Compose([
            transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ])

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        return self.transform(Image.fromarray(self.images[i])), self.labels[i]


def conventional(backbone: str, images: torch.Tensor, labels: torch.Tensor, batch: int, batches: int,
                 device: torch.device, workers: int) -> float:
    """Images/s with a torchvision DataLoader and per-image PIL transforms."""
    model, optimizer = make_model(backbone, int(labels.max()) + 1, device, channels_last=False)
    loader = DataLoader(PILDataset(images, labels), batch_size=batch, shuffle=True, drop_last=True,
                        num_workers=workers, pin_memory=device.type == "cuda", persistent_workers=workers > 0,
                        generator=torch.Generator().manual_seed(0))
    stream = iter(loader)

    def run(_: int) -> None:
        nonlocal stream
        try:
            x, y = next(stream)
        except StopIteration:
            stream = iter(loader)
            x, y = next(stream)
        train_step(model, optimizer, x.to(device, non_blocking=True), y.to(device, non_blocking=True), device)

    return batch * batches / timed(run, batches, warmup=2, device=device)


def throughput_table(device: torch.device, backbones: list[str], batch: int, batches: int, workers: int) -> list[list]:
    images, labels = synthetic_images(batch * (batches + 2), classes=100)
    rows = []
    for name in backbones:
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        fast = ours(name, images, labels, batch, batches, device)
        slow = conventional(name, images, labels, batch, batches, device, workers)
        rows.append([name, batch, f"{fast:,.0f}", f"{slow:,.0f}", f"{fast / slow:.2f}x", f"{peak_memory_mb(device):,.0f}"])
        print(f"  {name}: ours {fast:,.0f} img/s, DataLoader {slow:,.0f} img/s", file=sys.stderr)
    return rows


def evaluation_table(device: torch.device, sizes: list[int], n_query: int, n_gallery: int, official_up_to: int) -> list[list]:
    """Seconds to fill a T x T compatibility matrix (CMC@1, nearest neighbour) from T random models."""
    classes = 50
    q_images, q_labels = synthetic_images(n_query, classes, seed=1)
    g_images, g_labels = synthetic_images(n_gallery, classes, seed=2)
    query = ImageArrays(q_images.to(device), q_labels.to(device))
    gallery = ImageArrays(g_images.to(device), g_labels.to(device))
    data = ScenarioData(query, query, gallery, None, MEAN, STD, 32, classes, "synthetic")
    method = StandardMethod()
    kwargs = dict(mean=MEAN, std=STD, batch_size=1024, device=device, amp=AMP[0])
    rows = []
    for T in sizes:
        torch.manual_seed(T)
        models = [build_network("convnet-s", num_classes=classes, embedding_dim=64).to(device).eval() for _ in range(T)]
        started = time.perf_counter()
        features = [ModelFeatures(extract_features(m, method, query, **kwargs), extract_features(m, method, gallery, **kwargs))
                    for m in models]
        synchronise(device)
        extracted = time.perf_counter() - started
        compatibility_matrices(method, features, data, "nn", ["cmc@1"], seed=0)
        synchronise(device)
        total = time.perf_counter() - started
        official = "-"
        if T <= official_up_to:  # re-extract both sets for every lower-triangle entry, as the official code does
            started = time.perf_counter()
            for t in range(T):
                for k in range(t + 1):
                    extract_features(models[t], method, query, **kwargs)
                    extract_features(models[k], method, gallery, **kwargs)
            synchronise(device)
            official = f"{time.perf_counter() - started:.2f}"
        rows.append([T, T, T * (T + 1) // 2, f"{extracted:.2f}", f"{total - extracted:.2f}", f"{total:.2f}",
                     f"{total / T:.3f}", official])
        print(f"  T={T}: {total:.2f} s", file=sys.stderr)
    return rows


def gpu_utilisation_table(device: torch.device, batches: int) -> list[list]:
    """Achieved bf16 TFLOP/s of a ResNet-18 training step and its fraction of the device's peak."""
    from torch.utils.flop_counter import FlopCounterMode

    name = torch.cuda.get_device_name(device)
    peak = next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)
    rows = []
    for batch in (128, 512):
        images, labels = synthetic_images(batch * (batches + 2), classes=100)
        model, optimizer = make_model("resnet18", 100, device, channels_last=True)
        x = normalise(images[:batch].to(device), MEAN, STD).contiguous(memory_format=torch.channels_last)
        y = labels[:batch].to(device)
        with FlopCounterMode(display=False) as counter:
            train_step(model, optimizer, x, y, device)
        flops = counter.get_total_flops()
        rate = ours("resnet18", images, labels, batch, batches, device)
        tflops = flops * rate / batch / 1e12
        rows.append(["resnet18", batch, f"{rate:,.0f}", f"{flops / batch / 1e9:.2f}", f"{tflops:.1f}",
                     f"{100 * tflops / peak:.1f}%" if peak else "unknown peak"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--quick", action="store_true", help="fewer backbones and batches (a smoke run)")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers of the conventional pipeline")
    parser.add_argument("--parts", default="train,eval", help="which measurements: train, eval (comma-separated)")
    parser.add_argument("--models", help="comma-separated T of the evaluation table (default 2,4,8,16,31)")
    parser.add_argument("--images", help="QUERIES,GALLERY of the evaluation table (default 2000,4000 on CPU)")
    parser.add_argument("--official-up-to", type=int, default=8, help="largest T timed with per-entry re-extraction")
    parser.add_argument("--amp", choices=["bf16", "off"], help="precision of ours (default: bf16 on CUDA, fp32 on CPU)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    device = resolve_device(args.device)
    on_gpu = device.type == "cuda"
    AMP[0] = args.amp or ("bf16" if on_gpu else "off")
    backbones = ["convnet-s", "resnet20"] if args.quick else list_backbones()
    batch = 128
    batches = (40 if on_gpu else 6) // (3 if args.quick else 1) or 2
    sizes = [2, 4, 8] if args.quick else [2, 4, 8, 16, 31]
    n_query, n_gallery = (2000, 2000) if args.quick else ((10_000, 10_000) if on_gpu else (2000, 4000))
    if args.models:
        sizes = [int(t) for t in args.models.split(",")]
    if args.images:
        n_query, n_gallery = (int(n) for n in args.images.split(","))
    print(f"device: {device} ({torch.cuda.get_device_name(device) if on_gpu else f'{torch.get_num_threads()} threads'}), "
          f"torch {torch.__version__}")

    if "train" in parts:
        print(f"\n## Training throughput, batch {batch}, 32x32 images (ours vs DataLoader with {args.workers} workers)\n")
        print(tabulate(throughput_table(device, backbones, batch, batches, args.workers),
                       headers=["backbone", "batch", "ours img/s", "DataLoader img/s", "ratio", "peak MB"], tablefmt="github"))
    if "eval" in parts:
        print(f"\n## Compatibility-matrix evaluation, {n_query} queries x {n_gallery} gallery, convnet-s\n")
        print(tabulate(evaluation_table(device, sizes, n_query, n_gallery, official_up_to=args.official_up_to),
                       headers=["T", "extraction passes", "matrix entries", "extract s", "similarity s", "total s",
                                "s per model", "official re-extraction s"], tablefmt="github"))
    print(f"\npeak memory: {peak_memory_mb(device):,.0f} MB")

    if on_gpu:
        print("\n## ResNet-18 training, achieved bf16 arithmetic\n")
        print(tabulate(gpu_utilisation_table(device, batches), tablefmt="github",
                       headers=["backbone", "batch", "img/s", "GFLOP per image (fwd+bwd)", "TFLOP/s", "of peak"]))


if __name__ == "__main__":
    main()
