"""The new model's forward pass over a gallery, the cost of a refresh (backfilling): images/s per backbone and image
size, in fp32 and bf16 autocast, through the harness's own feature extraction (``tooling.extract_features``: the
path a cell's evaluation takes, channels-last, in evaluation batches), with the hours to re-embed 10 M items. Prints
a Markdown table (a benchmark, not a test).

    python benchmarks/reembed.py [--device cpu] [--images 1024] [--batch 256] [--repeats 3]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
from tabulate import tabulate

from benchbackcompat.data import ImageArrays
from benchbackcompat.method import StandardMethod
from benchbackcompat.models import build_network
from benchbackcompat.tooling import extract_features, resolve_device

BACKBONES = ("convnet-s", "convnet-m", "resnet18")
SIZES = (16, 32, 64)
PRECISIONS = {"fp32": "off", "bf16": "bf16"}  # the table's name -> ``train.amp``
ITEMS = 10_000_000  # the gallery a refresh is priced for
MEAN, STD = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)


def images_per_second(backbone: str, size: int, amp: str, device: torch.device, images: int, batch: int,
                      repeats: int) -> list[float]:
    """images/s of ``repeats`` timed passes over ``images`` random images (after one untimed pass)."""
    model = build_network(backbone, num_classes=10, image_size=size).to(device).eval()
    gen = torch.Generator().manual_seed(0)
    arrays = ImageArrays(torch.randint(0, 256, (images, 3, size, size), dtype=torch.uint8, generator=gen),
                         torch.zeros(images, dtype=torch.long))
    method = StandardMethod()

    def run() -> None:
        extract_features(model, method, arrays, mean=MEAN, std=STD, batch_size=batch, device=device, amp=amp)
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    run()
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        rates.append(images / (time.perf_counter() - started))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="auto, cpu, cuda (default cpu)")
    parser.add_argument("--images", type=int, default=1024, help="images per timed pass (default 1024)")
    parser.add_argument("--batch", type=int, default=256, help="evaluation batch size (default 256)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes; the median counts (default 3)")
    parser.add_argument("--backbones", default=",".join(BACKBONES))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    args = parser.parse_args()
    device = resolve_device(args.device)
    rows = []
    for backbone in args.backbones.split(","):
        for size in map(int, args.sizes.split(",")):
            row = [backbone, f"{size}x{size}"]
            for amp in PRECISIONS.values():
                rates = images_per_second(backbone, size, amp, device, args.images, args.batch, args.repeats)
                median = statistics.median(rates)
                row += [f"{median:,.0f} ({min(rates):,.0f}-{max(rates):,.0f})", f"{ITEMS / median / 3600:.2f}"]
            rows.append(row)
    headers = ["backbone", "images", *(h for name in PRECISIONS for h in (f"{name} images/s (median, range)",
                                                                          f"{name} h per 10 M"))]
    print(f"device {device}, {torch.get_num_threads()} threads, {args.images} images a pass, batch {args.batch}, "
          f"median of {args.repeats} passes\n")
    print(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))


if __name__ == "__main__":
    main()
