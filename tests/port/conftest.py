"""The corpus, ported once per session, and its programs run in as few interpreters as possible.

Each subprocess imports torch once (about 2 s here), so the two ports are made side by side,
then the originals, the ported copies, the bf16 copies and the simulated-GPU runs are started
side by side (the slowest group, simulated, in two interpreters), and torchrun launches two
at a time.
Every group runs in its own copy of the corpus: some programs write into their working folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from corpus_runner import report_name
from port_support import (
    AWARE,
    CORPUS,
    DISTRIBUTED,
    PROGRAMS,
    RUNNER,
    TORCHPORT,
    finish,
    free_port,
    halves,
    results_of,
    start,
)
from tolerances import ON_GPU

from torchport.cli import main

Runs = dict[str, dict[str, dict[str, str | None]]]
ALL = PROGRAMS + AWARE


def _copy(root: Path) -> Path:
    shutil.copytree(CORPUS, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="session")
def corpus_copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The corpus as written, ported by ``port --write``, and ported with ``--amp bf16``;
    the simulated runs get copies of the ported one and of the original."""
    base = tmp_path_factory.mktemp("corpus")
    roots = {name: _copy(base / name) for name in ("original", "ported", "bf16")}
    roots["simulated original"] = _copy(base / "simulated_original")
    ports = {
        "ported": start([str(TORCHPORT), "port", "--write", str(roots["ported"])], base),
        "bf16": start(
            [str(TORCHPORT), "port", "--amp", "bf16", "--write", str(roots["bf16"])], base
        ),
    }
    for name, process in ports.items():
        code, _, err = finish(process)
        # 1: written, with notes (TP199) on what it could not decide.
        assert code in (0, 1), f"port ({name}) exited {code}: {err[-3000:]}"
    shutil.copytree(roots["ported"], base / "simulated")
    roots["simulated"] = base / "simulated"
    return roots


@pytest.fixture(scope="session")
def ported_corpus(corpus_copies: dict[str, Path]) -> Path:
    return corpus_copies["ported"]


@pytest.fixture(scope="session")
def bf16_corpus(corpus_copies: dict[str, Path]) -> Path:
    return corpus_copies["bf16"]


@pytest.fixture(scope="session")
def distributed_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("distributed")
    for name in DISTRIBUTED:
        shutil.copy(CORPUS / name, root / name)
    assert main(["port", "--distributed", "--write", str(root)]) == 0
    return root


@pytest.fixture(scope="session")
def corpus_runs(corpus_copies: dict[str, Path]) -> Runs:
    """How every program ended: original, ported, ported with bf16 autocast, ported under
    ``--simulate cuda`` (with one report per program in ``reports/``), and the device-aware
    originals under ``--simulate cuda``."""
    python = sys.executable

    def runner(
        group: str, programs: list[list[str]], *options: str, **env: str
    ) -> list[subprocess.Popen[str]]:
        root = corpus_copies[group]
        return [
            start([python, str(RUNNER), *options, str(root), *p], root, **env) for p in programs
        ]

    reports = corpus_copies["simulated"] / "reports"
    reports.mkdir()
    processes = {
        # The CPU programs' originals are what their authors ran: CPU runs, also on a GPU
        # machine, where some of them would otherwise reach for CUDA (nn.DataParallel over
        # every visible GPU with the model left on the CPU, amp switched on by
        # torch.cuda.is_available()). The device-aware originals keep the GPU.
        "original": [
            *runner("original", [PROGRAMS], CUDA_VISIBLE_DEVICES=""),
            *runner("original", [AWARE]),
        ],
        "ported": runner("ported", [ALL]),
        "bf16": runner("bf16", [PROGRAMS]),
        "simulated": runner(
            "simulated", halves(ALL), "--simulate", "cuda", "--reports", str(reports)
        ),
        # The GPU path of the device-aware originals, to hold their ports to it.
        "simulated original": runner("simulated original", [AWARE], "--simulate", "cuda"),
    }
    runs: Runs = {}
    for group, started in processes.items():
        runs[group] = {}
        for process in started:
            runs[group].update(results_of(process))
    return runs


@pytest.fixture(scope="session")
def simulated_reports(
    corpus_copies: dict[str, Path], corpus_runs: Runs
) -> dict[str, dict[str, Any]]:
    """Each program's report, as ``torchport run --output-format json --report FILE`` writes."""
    reports = corpus_copies["simulated"] / "reports"
    return {p: json.loads((reports / report_name(p)).read_text()) for p in ALL}


@pytest.fixture(scope="session")
def torchrun_losses(distributed_corpus: Path) -> dict[str, tuple[int, str, str]]:
    """Each DDP program under torchrun with two processes, two launches at a time."""
    # Two ranks need two GPUs. Where CUDA has fewer, the ranks are launched without a visible
    # GPU, so that each takes the ported program's CPU path (gloo) instead of both sharing
    # (or, with NCCL, fighting over) one device.
    env = {"CUDA_VISIBLE_DEVICES": ""} if ON_GPU and _gpu_count() < 2 else {}
    outcomes: dict[str, tuple[int, str, str]] = {}
    pending = list(DISTRIBUTED)
    while pending:
        batch, pending = pending[:2], pending[2:]
        launched = {name: start(_torchrun(name), distributed_corpus, **env) for name in batch}
        outcomes.update({name: finish(p) for name, p in launched.items()})
    for name, outcome in list(outcomes.items()):
        if _gloo_aborted(outcome):
            outcomes[name] = finish(start(_torchrun(name), distributed_corpus, **env))
    return outcomes


def _torchrun(name: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
            "--master-port", str(free_port()), name]  # fmt: skip


def _gloo_aborted(outcome: tuple[int, str, str]) -> bool:
    """A rank killed by C++ ``std::terminate`` with no Python error: on a loaded two-core
    machine gloo sometimes aborts this way (a few runs in ten while other suites ran). Such a
    launch is retried once, alone; a fault of the ported program raises a Python exception
    instead, and a second abort still fails the test."""
    code, _, err = outcome
    aborted = "terminate called without an active exception" in err
    # the one traceback is the launcher's, reporting the dead rank
    return code != 0 and aborted and err.count("Traceback (most recent call last)") == 1


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count()
