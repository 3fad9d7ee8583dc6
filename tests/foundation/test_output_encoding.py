"""A finding with characters the terminal cannot encode is escaped, never an internal error."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchport.cli import main
from torchport.findings import Finding, Location, Report, Severity
from torchport.report import FORMATS, render

FORWARD = "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
BAD_MODULE = FORWARD + "        return x + torch.zeros(3)\n"


def _ascii_stream() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict", write_through=True)


def _written(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("ascii")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_renderer_escapes_what_an_ascii_stream_cannot_take(fmt: str) -> None:
    finding = Finding("TP991", "sample", Severity.WARNING, "café → GPU", Location("prög.py", 1, 0))
    stream = _ascii_stream()
    render(Report(command="check", findings=[finding], verdict="naïve"), fmt, stream)
    text = _written(stream)
    assert "caf" in text and ("\\xe9" in text or "\\u00e9" in text)
    assert stream.errors == "strict"  # the stream's own mode is given back


def _ascii_terminal(monkeypatch: pytest.MonkeyPatch) -> tuple[io.TextIOWrapper, io.TextIOWrapper]:
    # Set in the test itself: pytest puts its own capture back between fixtures and the test.
    out, err = _ascii_stream(), _ascii_stream()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    return out, err


def test_check_on_an_ascii_terminal_reports_a_non_ascii_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "prög.py").write_text(BAD_MODULE, encoding="utf-8")
    ascii_terminal = _ascii_terminal(monkeypatch)
    for fmt in FORMATS:
        assert main(["check", "--output-format", fmt, str(tmp_path / "prög.py")]) == 1
    out, err = (_written(s) for s in ascii_terminal)
    assert "pr\\xf6g.py" in out and "internal error" not in err


def test_doctor_on_an_ascii_terminal_reports_a_non_ascii_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shadowing = {
        "path": "/home/zoë/torch",
        "kind": "folder",
        "entry": "/home/zoë",
        "on": "sys.path",
    }
    probe: dict[str, Any] = {"probe": {"status": "ok"}, "local_torch": {"shadowing": shadowing}}
    monkeypatch.setattr("torchport.doctor.probes.collect", lambda **_: probe)
    ascii_terminal = _ascii_terminal(monkeypatch)
    assert main(["doctor", "--no-smoke"]) == 1
    out, err = (_written(s) for s in ascii_terminal)
    assert "/home/zo\\xeb/torch" in out and "internal error" not in err


def test_run_report_on_an_ascii_stderr_keeps_the_programs_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "prög.py"
    script.write_text(
        "import numpy, torch, sys\nx = torch.ones(3) * torch.from_numpy(numpy.ones(3))\n"
        "sys.exit(3)\n",
        encoding="utf-8",
    )
    ascii_terminal = _ascii_terminal(monkeypatch)
    assert main(["run", str(script)]) == 3
    err = _written(ascii_terminal[1])
    assert "TP350" in err and "pr\\xf6g.py" in err


def test_usage_error_naming_a_non_ascii_path_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    ascii_terminal = _ascii_terminal(monkeypatch)
    assert main(["run", "nö_such_script.py"]) == 2
    assert _written(ascii_terminal[1]).splitlines() == [
        "torchport: error: torchport run: no such script: n\\xf6_such_script.py"
    ]


def test_pythonioencoding_ascii_check_exits_with_findings_not_an_internal_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "hé.py").write_text(BAD_MODULE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "torchport", "check", "hé.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
        capture_output=True,
        text=True,
        encoding="ascii",
        errors="strict",
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "h\\xe9.py:4:" in done.stdout and done.stderr == ""
