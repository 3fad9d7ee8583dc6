"""Overhead of `torchport run` on a GPU: four training loops, observed against plain `python`.

The workloads of issue 12: an MLP, a small transformer encoder trained under bf16 autocast, a
ResNet-18-shaped conv net, and a small conv net fed by a ``num_workers=0`` DataLoader (pinned on
CUDA). Each runs as plain `python` and under `python -m torchport run`, interleaved and repeated;
the loop time is measured inside the program after a warm-up, between two
``torch.cuda.synchronize()`` calls, and the best of the repeats is kept. Prints the time per step
and the observe/plain ratio of each workload against the goal (<= 1.2x).

    python benchmarks/gpu_overhead.py [--repeats 3] [--steps 200] [--only mlp]

It needs CUDA (exit 2 without it). ``--device cpu`` exercises the harness on the CPU with smaller
shapes; those ratios are no GPU figures (on a GPU kernels are asynchronous, so the loop pays the
Python side of every op, which is what the observer adds to).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_overhead import _model as small_model  # the sibling benchmark's MLP and conv net

MODES = {"python": [], "observe": ["-m", "torchport", "run"]}
WORKLOADS = ("mlp", "transformer", "resnet18", "loader")
GOAL = 1.2
WARM_UP = 20  # steps before the timed loop (cuDNN autotuning, allocator, lazy init)
# Per device: batch size and the workload's own size knobs. The CPU shapes only keep a smoke
# run of the harness short; the GPU ones are those of the measurement.
SIZES: dict[str, dict[str, dict[str, int]]] = {
    "cuda": {
        "mlp": {"batch": 64},
        "transformer": {"batch": 32, "seq": 64, "width": 256, "layers": 4},
        "resnet18": {"batch": 64, "image": 32, "width": 64},
        "loader": {"batch": 64},
    },
    "cpu": {
        "mlp": {"batch": 64},
        "transformer": {"batch": 8, "seq": 16, "width": 64, "layers": 2},
        "resnet18": {"batch": 4, "image": 16, "width": 8},
        "loader": {"batch": 64},
    },
}
Batch = tuple[torch.Tensor, torch.Tensor]


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a residual connection (1x1 when it reshapes)."""

    def __init__(self, inputs: int, outputs: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(
                nn.Conv2d(inputs, outputs, 1, stride=stride, bias=False), nn.BatchNorm2d(outputs)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


def resnet18(width: int, classes: int = 10) -> nn.Module:
    """ResNet-18's layout (2 blocks at each of 4 widths) with a 3x3 stem for small images."""
    layers: list[nn.Module] = [
        nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
    ]  # fmt: skip
    inputs = width
    for stage in range(4):
        outputs = width * 2**stage
        layers += [BasicBlock(inputs, outputs, 1 if stage == 0 else 2)]
        layers += [BasicBlock(outputs, outputs, 1)]
        inputs = outputs
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inputs, classes)]
    return nn.Sequential(*layers)


class Encoder(nn.Module):
    """Token embedding, a few transformer encoder layers, mean pooling, a class head."""

    def __init__(self, width: int, layers: int, vocab: int = 1000, classes: int = 10) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


def _fixed(batch: Batch) -> Iterator[Batch]:
    return iter(lambda: batch, None)


def _setup(kind: str, device: torch.device, batches: int) -> tuple[nn.Module, Iterator[Batch]]:
    """The model of ``kind`` and its host batches (a loader makes ``batches`` of them)."""
    size = SIZES[device.type][kind]
    batch = size["batch"]
    labels = torch.randint(0, 10, (batch,))
    if kind == "mlp":
        return small_model("mlp"), _fixed((torch.randn(batch, 784), labels))  # type: ignore[return-value]
    if kind == "transformer":
        tokens = torch.randint(0, 1000, (batch, size["seq"]))
        return Encoder(size["width"], size["layers"]), _fixed((tokens, labels))
    if kind == "resnet18":
        images = torch.randn(batch, 3, size["image"], size["image"])
        return resnet18(size["width"]), _fixed((images, labels))
    count = batches * batch
    data = TensorDataset(torch.randn(count, 1, 28, 28), torch.randint(0, 10, (count,)))
    loader = DataLoader(data, batch_size=batch, shuffle=True, pin_memory=device.type == "cuda")
    return small_model("conv"), iter(loader)  # type: ignore[return-value]


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def workload(kind: str, steps: int, device: torch.device, warm_up: int = WARM_UP) -> float:
    """Train ``kind`` for ``steps`` steps on ``device`` after ``warm_up``; the loop's seconds."""
    torch.manual_seed(0)
    model, batches = _setup(kind, device, warm_up + steps)
    model.to(device)
    step = _step(kind, model, batches, device)
    for _ in range(warm_up):
        step()
    _synchronize(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    _synchronize(device)
    return time.perf_counter() - start


def _step(
    kind: str, model: nn.Module, batches: Iterator[Batch], device: torch.device
) -> Callable[[], None]:
    if kind == "transformer":
        optimizer: torch.optim.Optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    autocast = kind == "transformer"

    def step() -> None:
        x, y = next(batches)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def _measure(mode: str, kind: str, args: argparse.Namespace) -> float:
    command = [sys.executable, *MODES[mode], os.path.abspath(__file__), "--workload", kind]
    command += ["--steps", str(args.steps), "--warm-up", str(args.warm_up), "--device", args.device]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{kind} under {mode} exited {done.returncode}: {last}")
    return float(done.stdout.split()[-1])


def _compare(args: argparse.Namespace) -> bool:
    """Run every chosen workload both ways; print one line each; True if all meet the goal."""
    met = True
    for kind in args.only or WORKLOADS:
        best = dict.fromkeys(MODES, float("inf"))
        for _ in range(args.repeats):
            for mode in MODES:
                best[mode] = min(best[mode], _measure(mode, kind, args))
        ratio = best["observe"] / best["python"]
        met = met and ratio <= GOAL
        ms = {mode: 1000 * t / args.steps for mode, t in best.items()}
        verdict = "ok" if ratio <= GOAL else "ABOVE GOAL"
        print(
            f"{kind:11s} {args.steps} steps, ms/step: python {ms['python']:.3f}  "
            f"observe {ms['observe']:.3f}  ratio {ratio:.2f}x (goal <= {GOAL}x: {verdict})",
            flush=True,
        )
    return met


def _header(device: str) -> str:
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU (harness check only)"
    return f"{name}, torch {torch.__version__}, best of repeats, loop time after warm-up"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warm-up", type=int, default=WARM_UP, help="untimed steps first")
    parser.add_argument("--only", choices=WORKLOADS, action="append", help="repeatable")
    parser.add_argument("--workload", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            "gpu_overhead: CUDA is not available (use --device cpu to check the harness)",
            file=sys.stderr,
        )
        return 2
    if args.workload:
        seconds = workload(args.workload, args.steps, torch.device(args.device), args.warm_up)
        print(f"elapsed {seconds:.6f}")
        return 0
    print(_header(args.device), flush=True)
    try:
        met = _compare(args)
    except (RuntimeError, ValueError, IndexError) as exc:
        print(f"gpu_overhead: {exc}", file=sys.stderr)
        return 2
    print(f"all within {GOAL}x: {'yes' if met else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
