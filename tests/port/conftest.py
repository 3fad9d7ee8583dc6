"""The corpus, ported once per session, and its programs run in as few interpreters as possible.

Each subprocess imports torch once (about 2 s here), so the originals, the ported copies and the
simulated-GPU run are started side by side, and torchrun launches two at a time.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from port_support import (
    CORPUS,
    DISTRIBUTED,
    PROGRAMS,
    RUNNER,
    TORCHPORT,
    finish,
    free_port,
    has_subcommand,
    results_of,
    simulate_report_path,
    start,
)

from torchport.cli import main


@pytest.fixture(scope="session")
def ported_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the corpus ported in place by ``torchport port --write``."""
    root = tmp_path_factory.mktemp("ported") / "corpus"
    shutil.copytree(CORPUS, root, ignore=shutil.ignore_patterns("__pycache__"))
    assert main(["port", "--write", str(root)]) == 0
    return root


@pytest.fixture(scope="session")
def bf16_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the corpus ported with ``--amp bf16``."""
    root = tmp_path_factory.mktemp("bf16") / "corpus"
    shutil.copytree(CORPUS, root, ignore=shutil.ignore_patterns("__pycache__"))
    assert main(["port", "--amp", "bf16", "--write", str(root)]) == 0
    return root


@pytest.fixture(scope="session")
def distributed_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("distributed")
    for name in DISTRIBUTED:
        shutil.copy(CORPUS / name, root / name)
    assert main(["port", "--distributed", "--write", str(root)]) == 0
    return root


@pytest.fixture(scope="session")
def corpus_runs(
    ported_corpus: Path, bf16_corpus: Path
) -> dict[str, dict[str, dict[str, str | None]]]:
    """Last lines of every program: original, ported, ported with bf16 autocast, and ported
    under ``--simulate cuda``."""
    python = sys.executable
    processes = {
        "original": start([python, str(RUNNER), str(CORPUS), *PROGRAMS], CORPUS),
        "ported": start([python, str(RUNNER), str(ported_corpus), *PROGRAMS], ported_corpus),
        "bf16": start([python, str(RUNNER), str(bf16_corpus), *PROGRAMS], bf16_corpus),
    }
    if has_subcommand("run"):
        report = simulate_report_path(ported_corpus)
        simulate = [str(TORCHPORT), "run", "--simulate", "cuda", "--report", str(report)]
        simulate += ["--output-format", "json", "--exit-zero", str(RUNNER), str(ported_corpus)]
        processes["simulated"] = start([*simulate, *PROGRAMS], ported_corpus)
    return {name: results_of(p) for name, p in processes.items()}


@pytest.fixture(scope="session")
def torchrun_losses(distributed_corpus: Path) -> dict[str, tuple[int, str, str]]:
    """Each DDP program under torchrun with two CPU processes (gloo), two launches at a time."""
    outcomes: dict[str, tuple[int, str, str]] = {}
    pending = list(DISTRIBUTED)
    while pending:
        batch, pending = pending[:2], pending[2:]
        launched = {
            name: start(
                [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                 "--master-port", str(free_port()), name],
                distributed_corpus,
            )
            for name in batch
        }  # fmt: skip
        outcomes.update({name: finish(p) for name, p in launched.items()})
    return outcomes
