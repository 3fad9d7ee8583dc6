"""Speed of `torchport check` (all rules, one process) against the floor of any Python linter.

The floor is what no linter written in Python can beat on the same files: starting the
interpreter and running a bare `ast.parse` over each file. By default the files are
torch/nn/modules of the installed torch (28 files, about 23k lines); `--tree torch` takes the
whole torch package (`--limit N` an even sample of it). Every command is a subprocess timed end
to end, start-up included (torchport and TorchFix through the commands pip installs next to
this interpreter), best of `--repeats` runs after one untimed warm-up run (which writes the
bytecode an installed package would have; PYTHONDONTWRITEBYTECODE is not passed on), all in the
same run. `--torchfix` also times TorchFix 0.7.0 (`--select ALL`) on the same files, when it is
installed.

    OMP_NUM_THREADS=1 python benchmarks/check_speed.py [--tree nn|torch] [--limit N]
        [--repeats R] [--torchfix]

Target (issue 14): torchport at most 2x the floor on torch/nn/modules.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

FLOOR = "import ast, sys\nfor p in sys.argv[1:]:\n    ast.parse(open(p, 'rb').read(), p)\n"


def torch_files(tree: str, limit: int | None) -> list[str]:
    """The .py files of torch/nn/modules (``nn``) or of the whole torch package (``torch``)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed")
    root = Path(spec.origin).parent
    folder = root / "nn" / "modules" if tree == "nn" else root
    pattern = "*.py" if tree == "nn" else "**/*.py"
    files = sorted(str(p) for p in folder.glob(pattern))
    if limit is not None and limit < len(files):
        step = len(files) / limit
        files = [files[int(i * step)] for i in range(limit)]
    return files


def timed(command: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one run, and its stdout (exit 0 or 1 is success).

    CPU time (user + system of the child) is the steadier figure on a shared machine, where
    other processes stretch wall time.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["OMP_NUM_THREADS"] = "1"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, cpu, done.stdout


def commands(files: list[str], torchfix: bool) -> dict[str, list[str]]:
    # the `torchport` command pip installs, as a user runs it (and as TorchFix runs below)
    script = shutil.which("torchport", path=str(Path(sys.executable).parent))
    start = [script] if script is not None else [sys.executable, "-m", "torchport"]
    ours = [*start, "check", "--exit-zero", "--no-gitignore"]
    runs = {
        "floor (python + ast.parse)": [sys.executable, "-c", FLOOR, *files],
        "torchport check -j 1": [*ours, "--output-format", "json", "-j", "1", *files],
    }
    if torchfix:
        found = shutil.which("torchfix", path=str(Path(sys.executable).parent))
        if found is None:
            raise SystemExit("TorchFix is not installed (pip install torchfix==0.7.0)")
        runs["torchfix -j 1"] = [found, "--select", "ALL", "-j", "1", *files]
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", choices=("nn", "torch"), default="nn")
    parser.add_argument("--limit", type=int, help="an even sample of N files")
    parser.add_argument("--repeats", type=int, default=5, help="best of R runs per command")
    parser.add_argument("--torchfix", action="store_true", help="also time TorchFix")
    args = parser.parse_args()
    files = torch_files(args.tree, args.limit)
    lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
    runs = commands(files, args.torchfix)
    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    findings = 0
    for command in runs.values():
        timed(command)  # warm-up: bytecode written and files cached, as from a user's 2nd run
    for _ in range(args.repeats):
        for name, command in runs.items():  # interleaved, so load drifts hit all alike
            elapsed, used, out = timed(command)
            wall[name] = min(wall.get(name, elapsed), elapsed)
            cpu[name] = min(cpu.get(name, used), used)
            if name.startswith("torchport"):
                findings = len(json.loads(out)["findings"])
    print(f"files: {len(files)} ({lines} lines), torchport findings: {findings}")
    print(f"best of {args.repeats}:{'wall':>24} {'CPU':>9}")
    for name in runs:
        print(f"{name:28} {wall[name]:7.3f} s {cpu[name]:7.3f} s")
    floor, ours = "floor (python + ast.parse)", "torchport check -j 1"
    print(
        f"torchport / floor: {wall[ours] / wall[floor]:.2f}x wall, "
        f"{cpu[ours] / cpu[floor]:.2f}x CPU (target <= 2x)"
    )
    if "torchfix -j 1" in wall:
        print(f"torchfix / torchport: {wall['torchfix -j 1'] / wall[ours]:.1f}x wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
