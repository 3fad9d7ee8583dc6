"""Overhead of `torchport run` and `torchport run --simulate cuda` against plain `python`.

One run measures, side by side, four CPU training loops: a small MLP (784-256-256-10, batch 64),
a tiny one (128 wide, an op-bound worst case), a small conv net, and the tiny MLP fed by a
``num_workers=0`` DataLoader over a per-sample NumPy dataset ("loader": the DataLoader's many
small torch calls). Each runs under plain python, `torchport run` (observe) and `torchport run
--simulate cuda`, repeated and interleaved; the loop time is measured inside the program
(start-up excluded) and the best of the repeats is kept. Prints the times and the ratios
against plain python.

    OMP_NUM_THREADS=1 python benchmarks/run_overhead.py [--repeats 5] [--steps 150] [--only loader]

Targets (issue 4): observe <= 1.5x on the conv net and <= 2x on the MLP; simulate <= 3x.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

MODES = {
    "python": [],
    "observe": ["-m", "torchport", "run"],
    "simulate": ["-m", "torchport", "run", "--simulate", "cuda"],
}


WORKLOADS = ("mlp", "tiny-mlp", "conv", "loader")
SHAPES = {"mlp": (64, 784), "tiny-mlp": (64, 128), "conv": (32, 1, 28, 28), "loader": (64, 128)}
WARM_UP = 10


def _numpy_loader(batches: int) -> object:
    """A DataLoader of ``batches`` batches, made sample by sample from float64 NumPy data."""
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Samples(Dataset):  # type: ignore[type-arg]
        def __init__(self, n: int) -> None:
            rng = np.random.default_rng(0)
            self.x = rng.standard_normal((n, SHAPES["loader"][1]))
            self.y = rng.integers(0, 10, size=n)

        def __len__(self) -> int:
            return len(self.x)

        def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
            return torch.from_numpy(self.x[i]).float(), torch.tensor(self.y[i])

    size = SHAPES["loader"][0]
    return DataLoader(Samples(batches * size), batch_size=size, shuffle=True)


def _model(kind: str) -> object:
    from torch import nn

    if kind != "conv":
        # tiny-mlp and loader are 128 wide
        width = 256 if kind == "mlp" else 128
        return nn.Sequential(
            nn.Linear(SHAPES[kind][1], width), nn.ReLU(),
            nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10),
        )  # fmt: skip
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    )  # fmt: skip


def workload(kind: str, steps: int) -> float:
    """Train ``kind`` for ``steps`` steps on the default device; return the loop's seconds."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = _model(kind).to(device)  # type: ignore[attr-defined]
    shape = SHAPES[kind]
    if kind == "loader":
        # One long epoch: the loop fetches each batch, as a training loop does.
        batches = iter(_numpy_loader(WARM_UP + steps))  # type: ignore[call-overload]
    else:
        fixed = (torch.randn(*shape), torch.randint(0, 10, (shape[0],)))
        batches = iter(lambda: fixed, None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step() -> None:
        x, y = next(batches)
        xb, yb = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = nn.functional.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for _ in range(WARM_UP):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - start


def _measure(mode: str, kind: str, steps: int) -> float:
    command = [sys.executable, *MODES[mode]]
    command += [os.path.abspath(__file__), "--workload", kind, "--steps", str(steps)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=WORKLOADS)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=WORKLOADS, action="append", help="repeatable")
    args = parser.parse_args()
    if args.workload:
        print(f"elapsed {workload(args.workload, args.steps):.6f}")
        return
    for kind in args.only or WORKLOADS:
        best = {mode: float("inf") for mode in MODES}
        for _ in range(args.repeats):
            for mode in MODES:
                best[mode] = min(best[mode], _measure(mode, kind, args.steps))
        base = best["python"]
        per_step = {m: 1000 * t / args.steps for m, t in best.items()}
        print(
            f"{kind:8s} {args.steps} steps, ms/step: python {per_step['python']:.3f}  "
            f"observe {per_step['observe']:.3f} ({best['observe'] / base:.2f}x)  "
            f"simulate {per_step['simulate']:.3f} ({best['simulate'] / base:.2f}x)"
        )


if __name__ == "__main__":
    main()
