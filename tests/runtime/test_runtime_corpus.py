"""Every corpus program runs under `torchport run` and `--simulate cuda` without a torchport error.

The programs are discovered, not listed: each ``.py`` file in tests/corpus and each module of a
package there that has a ``__main__`` block (run as ``python -m``). The two modes run side by side
in one interpreter each (torch imported once per mode), as tests/port/corpus_runner.py does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
RUNNER = Path(__file__).resolve().parent / "corpus_watch_runner.py"
MODES = ("observe", "cuda")
TIMEOUT = 1200


def corpus_entries(root: Path = CORPUS) -> list[str]:
    """Top-level scripts, and ``-m:pkg.module`` for each package module with a main block."""
    entries = sorted(p.name for p in root.glob("*.py") if not p.name.startswith("_"))
    for package in sorted(p for p in root.iterdir() if (p / "__init__.py").is_file()):
        for module in sorted(package.rglob("*.py")):
            if "__main__" not in module.read_text(encoding="utf-8"):
                continue
            dotted = ".".join(module.relative_to(root).with_suffix("").parts)
            entries.append(f"-m:{dotted.removesuffix('.__main__')}")
    return entries


ENTRIES = corpus_entries()


@pytest.fixture(scope="module")
def corpus_results() -> dict[str, dict[str, dict[str, object]]]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONWARNINGS", None)
    runs = {mode: _start(mode, env) for mode in MODES}
    results = {}
    for mode, process in runs.items():
        out, err = process.communicate(timeout=TIMEOUT)
        lines = out.strip().splitlines()
        assert process.returncode == 0 and lines, f"{mode} runner failed: {err[-3000:]}"
        results[mode] = json.loads(lines[-1])
    return results


def _start(mode: str, env: dict[str, str]) -> subprocess.Popen[str]:
    command = [sys.executable, str(RUNNER), str(CORPUS), mode, *ENTRIES]
    pipe = subprocess.PIPE
    return subprocess.Popen(command, env=env, stdout=pipe, stderr=pipe, text=True)


def test_the_corpus_has_scripts_and_package_entry_points() -> None:
    assert any(e.endswith(".py") for e in ENTRIES)
    assert any(e.startswith("-m:") for e in ENTRIES)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("entry", ENTRIES)
def test_corpus_program_meets_no_torchport_internal_error(
    corpus_results: dict[str, dict[str, dict[str, object]]], entry: str, mode: str
) -> None:
    result = corpus_results[mode][entry]
    assert result["internal"] == [], result["internal"]
    assert result["torchport_traceback"] is None, result["torchport_traceback"]
