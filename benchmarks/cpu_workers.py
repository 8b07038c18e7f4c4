"""Training steps per second on a CPU: one process on every thread against one process per thread (``--workers``).

Workload: the CPU preset's training step (convnet-s, 16x16 images, batch 32, 50 classes, SGD with momentum),
after 20 untimed steps. ``one process`` runs it with all the machine's threads; ``N workers`` runs N processes at
once with one thread each, as ``benchbackcompat run --workers N`` does, and sums their rates. Both are measured in
this one run, side by side; the ratio is the figure.

    python benchmarks/cpu_workers.py [--steps 400]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import time

import torch
import torch.nn.functional as F

from benchbackcompat.models import build_network


def steps_per_second(threads: int, steps: int) -> float:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    network = build_network("convnet-s", num_classes=50, image_size=16)
    optimiser = torch.optim.SGD(network.parameters(), lr=0.05, momentum=0.9)
    images, labels = torch.randn(32, 3, 16, 16), torch.randint(0, 50, (32,))

    def step() -> None:
        loss = F.cross_entropy(network(images).logits, labels)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()

    for _ in range(20):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    threads = os.cpu_count() or 1
    single = steps_per_second(threads, args.steps)
    with multiprocessing.get_context("spawn").Pool(threads) as pool:
        workers = sum(pool.starmap(steps_per_second, [(1, args.steps)] * threads))
    print(f"one process on {threads} threads: {single:.1f} steps/s")
    print(f"{threads} workers of one thread:     {workers:.1f} steps/s ({workers / single:.2f}x)")


if __name__ == "__main__":
    main()
