"""Speed of `torchport check` (all rules) against TorchFix 0.7.0 on the same real tree.

The tree is the Python files of the installed torch package. Both tools run in one process
(`-j 1`) on the same file list, as subprocesses timed end to end (start-up included), in the
same run; then `torchport check -j 2` shows how it scales. Prints files per second and ratios.

    OMP_NUM_THREADS=1 python benchmarks/check_speed.py [--limit N] [--repeats R]

Target (issue 3): torchport at least 5x faster than TorchFix.
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


def torch_files(limit: int | None) -> list[str]:
    """The installed torch package's .py files (an even sample of ``limit`` of them)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed")
    files = sorted(str(p) for p in Path(spec.origin).parent.rglob("*.py"))
    if limit is not None and limit < len(files):
        step = len(files) / limit
        files = [files[int(i * step)] for i in range(limit)]
    return files


def timed(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the command and its worker processes) and stdout."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[:3]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, cpu, done.stdout


def torchfix_command() -> list[str]:
    found = shutil.which("torchfix", path=str(Path(sys.executable).parent))
    if found is None:
        raise SystemExit("TorchFix is not installed (pip install torchfix==0.7.0)")
    return [found, "--select", "ALL", "-j", "1"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="check an even sample of N files")
    parser.add_argument("--repeats", type=int, default=1, help="best of R runs per tool")
    args = parser.parse_args()
    files = torch_files(args.limit)
    ours = [sys.executable, "-m", "torchport", "check", "--exit-zero", "--no-gitignore"]
    ours += ["--output-format", "json"]
    runs = {
        "torchport -j 1": [*ours, "-j", "1"],
        "torchfix -j 1": torchfix_command(),
        "torchport -j 2": [*ours, "-j", "2"],
    }
    best: dict[str, float] = {}
    cpu: dict[str, float] = {}
    findings = 0
    for _ in range(args.repeats):
        for name, command in runs.items():
            elapsed, used, out = timed([*command, *files])
            best[name] = min(best.get(name, elapsed), elapsed)
            cpu[name] = min(cpu.get(name, used), used)
            if name == "torchport -j 1":
                findings = len(json.loads(out)["findings"])
    print(f"files: {len(files)} (torch package), torchport findings: {findings}")
    for name, seconds in best.items():
        rate = len(files) / seconds
        print(f"{name:16} {seconds:8.2f} s wall {rate:8.1f} files/s  {cpu[name]:8.2f} s CPU")
    one, two, peer = best["torchport -j 1"], best["torchport -j 2"], best["torchfix -j 1"]
    print(f"torchport -j 1 vs torchfix -j 1: {peer / one:.1f}x faster (wall), ", end="")
    print(f"{cpu['torchfix -j 1'] / cpu['torchport -j 1']:.1f}x less CPU")
    print(f"torchport -j 2 vs -j 1:          {one / two:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
