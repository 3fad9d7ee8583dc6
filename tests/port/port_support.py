"""Helpers for the port tests: the corpus, its programs, and running them in subprocesses."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
RUNNER = Path(__file__).resolve().parent / "corpus_runner.py"
TORCHPORT = Path(sys.executable).with_name("torchport")
PROGRAMS = [
    "amp_legacy.py",
    "checkpoint_roundtrip.py",
    "cnn_classifier.py",
    "dataparallel_mlp.py",
    "hardcoded_device.py",
    "metrics_numpy.py",
    "mlp_regression.py",
    "numpy_dataset.py",
    "rnn_sequence.py",
    "text_classifier.py",
    "train_eval_loops.py",
    "transformer_tiny.py",
    "-m:pkg_app.train",
]
# Designed for equivalence under DDP: deterministic order (shuffle=False), plain SGD, no dropout
# or batch norm, a global batch that splits evenly, the final loss measured on the full data.
DISTRIBUTED = ["cnn_classifier.py", "dataparallel_mlp.py", "numpy_dataset.py", "rnn_sequence.py"]
TIMEOUT = 240


def source_file(root: Path, program: str) -> Path:
    if program.startswith("-m:"):
        return root.joinpath(*program[3:].split(".")).with_suffix(".py")
    return root / program


def child_env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONWARNINGS", None)
    return env


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        args,
        cwd=cwd,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return process.returncode, out, err


def results_of(process: subprocess.Popen[str]) -> dict[str, dict[str, str | None]]:
    code, out, err = finish(process)
    lines = out.strip().splitlines()
    if not lines:
        raise AssertionError(f"runner printed nothing (exit {code}): {err[-2000:]}")
    results: dict[str, dict[str, str | None]] = json.loads(lines[-1])
    return results


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def final_loss(line: str | None) -> float:
    assert line and line.startswith("final loss "), f"no final loss printed: {line!r}"
    return float(line.split()[-1])


def simulate_report_path(ported_corpus: Path) -> Path:
    return ported_corpus.parent / "simulate-report.json"


def has_subcommand(name: str) -> bool:
    """Whether ``torchport <name>`` exists (other parts of torchport are built in parallel)."""
    return importlib.util.find_spec(f"torchport.cli.{name}") is not None
