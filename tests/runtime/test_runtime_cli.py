"""`torchport run`: the program runs as under python; the report always gets written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from runtime_support import SCRIPTS

from torchport.cli import main

PROGRAM = """\
import sys
import torch
print("argv", sys.argv[1:])
print("path0", sys.path[0] == {folder!r})
print("name", __name__)
x = torch.ones(3) * torch.from_numpy(__import__("numpy").ones(3))
{ending}
"""


def _script(tmp_path: Path, ending: str) -> Path:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM.format(folder=str(tmp_path), ending=ending), encoding="utf-8")
    return script


def test_stdout_and_exit_code_match_plain_python_and_report_goes_to_stderr(
    tmp_path: Path,
) -> None:
    script = _script(tmp_path, "sys.exit(3)")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    plain = subprocess.run(
        [sys.executable, str(script), "a", "--b"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    observed = subprocess.run(
        [sys.executable, "-m", "torchport", "run", str(script), "a", "--b"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert plain.returncode == observed.returncode == 3
    assert observed.stdout == plain.stdout
    assert "argv ['a', '--b']" in plain.stdout and "path0 True" in plain.stdout
    assert "TP350" in observed.stderr


def test_report_file_is_written_when_the_program_raises(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script(tmp_path, "raise ValueError('boom')")
    report = tmp_path / "report.json"
    code = main(["run", "--report", str(report), "--output-format", "json", str(script)])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" in err and "ValueError: boom" in err and "torchport/" not in err
    codes = [f["code"] for f in json.loads(report.read_text())["findings"]]
    assert codes == ["TP350"]


def test_ctrl_c_exits_130_and_still_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script(tmp_path, "raise KeyboardInterrupt")
    assert main(["run", str(script)]) == 130
    err = capsys.readouterr().err
    assert "KeyboardInterrupt" in err and "TP350" in err


def test_fail_on_turns_findings_into_exit_code_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script(tmp_path, "")
    assert main(["run", str(script)]) == 0
    assert main(["run", "--fail-on", "warning", str(script)]) == 1
    capsys.readouterr()


def test_module_mode_runs_the_module_as_main(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tpmodule_demo.py").write_text("print('main' if __name__ == '__main__' else '')")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "-m", "tpmodule_demo"]) == 0
    assert capsys.readouterr().out == "main\n"


def test_simulated_device_bug_fails_at_the_same_line(capsys: pytest.CaptureFixture[str]) -> None:
    script = SCRIPTS / "bad_factory_in_forward.py"
    assert main(["run", "--simulate", "cuda", str(script)]) == 1
    err = capsys.readouterr().err
    frames = [
        line for line in err.splitlines()
        if line.startswith("  File ") and "bad_factory_in_forward.py" in line
    ]  # fmt: skip
    assert frames[-1].endswith("line 14, in forward")


@pytest.mark.parametrize(
    "argv", [["run"], ["run", "no_such_script.py"], ["run", "--simulate", "tpu", "x.py"]]
)
def test_usage_mistakes_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "torchport: error:" in capsys.readouterr().err
