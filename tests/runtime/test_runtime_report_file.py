"""`run --report PATH`: checked before the program runs, never overwrites what is not a report,
never follows the program's chdir, and never changes the program's exit code."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from torchport.cli import main
from torchport.report.destination import is_torchport_report

SCRIPT = """\
import os, sys
open({ran!r}, "w").close()
{body}
sys.exit({code})
"""


def _script(folder: Path, body: str = "", code: int = 0) -> tuple[Path, Path]:
    ran = folder / "RAN"
    script = folder / "prog.py"
    script.write_text(SCRIPT.format(ran=str(ran), body=body, code=code), encoding="utf-8")
    return script, ran


def test_report_over_the_script_itself_is_refused_and_nothing_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script, ran = _script(tmp_path)
    source = script.read_text(encoding="utf-8")
    assert main(["run", "--report", str(script), str(script)]) == 2
    assert script.read_text(encoding="utf-8") == source and not ran.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a torchport report" in err[0] and "--force-report" in err[0]


def test_force_report_overwrites_a_file_that_is_not_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script, _ = _script(tmp_path, code=3)
    other = tmp_path / "notes.txt"
    other.write_text("my notes\n", encoding="utf-8")
    assert main(["run", "--report", str(other), "--force-report", str(script)]) == 3
    assert is_torchport_report(other.read_text(encoding="utf-8"))
    capsys.readouterr()


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_a_report_from_an_earlier_run_is_overwritten_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    script, _ = _script(tmp_path)
    report = tmp_path / "report.out"
    argv = ["run", "--report", str(report), "--output-format", fmt, str(script)]
    assert main(argv) == 0
    first = report.read_text(encoding="utf-8")
    assert is_torchport_report(first)
    report.write_text(first + "\n", encoding="utf-8")  # changed, so the rewrite shows
    assert main(argv) == 0
    assert report.read_text(encoding="utf-8") == first
    capsys.readouterr()


def test_an_empty_file_is_overwritten_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script, _ = _script(tmp_path)
    report = tmp_path / "report.json"
    report.touch()
    assert main(["run", "--report", str(report), "--output-format", "json", str(script)]) == 0
    assert json.loads(report.read_text(encoding="utf-8"))["tool"] == "torchport"
    capsys.readouterr()


def test_relative_report_path_does_not_follow_the_programs_chdir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script, _ = _script(tmp_path, body=f"os.chdir({str(elsewhere)!r})")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--report", "report.txt", str(script)]) == 0
    assert (tmp_path / "report.txt").exists() and not (elsewhere / "report.txt").exists()
    capsys.readouterr()


def test_report_path_in_a_missing_folder_fails_before_the_program_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script, ran = _script(tmp_path, code=3)
    assert main(["run", "--report", str(tmp_path / "no" / "r.txt"), str(script)]) == 2
    assert not ran.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such folder" in err[0]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root ignores permissions")
def test_read_only_report_file_fails_before_the_program_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script, ran = _script(tmp_path)
    report = tmp_path / "report.txt"
    report.write_text("", encoding="utf-8")
    report.chmod(stat.S_IRUSR)
    assert main(["run", "--report", str(report), str(script)]) == 2
    assert not ran.exists() and "read-only" in capsys.readouterr().err


def test_report_that_cannot_be_written_late_goes_to_stderr_and_keeps_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    # The program removes the report's folder: found only when the report is written.
    script, _ = _script(tmp_path, body=f"os.rmdir({str(out)!r})", code=3)
    assert main(["run", "--report", str(out / "r.txt"), str(script)]) == 3
    err = capsys.readouterr().err
    assert "cannot write the report to" in err
    assert "No finding was recorded before the failure." in err  # it exited with 3


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_report_through_a_symlink_writes_its_target_and_keeps_the_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script, _ = _script(tmp_path)
    target = tmp_path / "real.txt"
    target.write_text("", encoding="utf-8")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    assert main(["run", "--report", str(link), str(script)]) == 0
    assert link.is_symlink() and "No findings." in target.read_text(encoding="utf-8")
    capsys.readouterr()


@pytest.mark.skipif(os.name != "posix", reason="umask")
def test_new_report_file_gets_the_mode_open_would_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script, _ = _script(tmp_path)
    umask = os.umask(0o022)
    try:
        assert main(["run", "--report", str(tmp_path / "r.txt"), str(script)]) == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "r.txt").stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left
    capsys.readouterr()
