"""The release check: every ``.py`` of the installed torch package through ``check``, ``check
--fix --unsafe-fixes`` and ``port --write`` on copies (benchmarks/torch_corpus.py). Minutes
long: marked ``slow`` and run only with TORCHPORT_SLOW=1 (README, Development)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "torch_corpus.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.environ.get("TORCHPORT_SLOW"), reason="set TORCHPORT_SLOW=1"),
]


def test_the_torch_package_is_checked_fixed_and_ported_without_internal_errors() -> None:
    limit = os.environ.get("TORCHPORT_CORPUS_LIMIT")
    command = [sys.executable, str(SCRIPT), "--json", *(["--limit", limit] if limit else [])]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    figures = json.loads(done.stdout)
    for command_name, row in figures.items():
        assert row["internal errors"] == [], command_name
        assert row.get("unparsable", 0) == 0 and row.get("unstable", 0) == 0, command_name
    assert figures["check"]["files"] > 0 and figures["check --fix --unsafe-fixes"]["fixes"] > 0
    assert done.returncode == 0, done.stderr[-2000:]
