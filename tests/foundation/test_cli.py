"""The command line: fast start, one-line errors with exit code 2, rule docs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from torchport.cli import main


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_version_and_help_do_not_import_torch() -> None:
    probe = (
        "import sys; from torchport.cli import main\n"
        "for argv in (['--version'], ['--help']):\n"
        "    try: main(argv)\n"
        "    except SystemExit: pass\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_version_prints_the_package_version() -> None:
    from torchport import __version__

    result = _run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"torchport {__version__}"


@pytest.mark.parametrize(
    "argv",
    [["no-such-command"], ["rule"], ["rule", "TP999"], ["rule", "--bogus"]],
)
def test_usage_mistakes_give_one_line_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("torchport: error: ")
    assert "Traceback" not in err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: torchport" in capsys.readouterr().out


def test_rule_all_prints_every_rule_and_json_lists_them(capsys: pytest.CaptureFixture[str]) -> None:
    from torchport.rules import all_rules

    assert main(["rule", "--all", "--output-format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [r["code"] for r in payload] == [r.code for r in all_rules()]


def test_internal_errors_are_one_line_without_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import torchport.cli.rule as rule_cli

    def boom(args: object) -> int:
        raise RuntimeError("kaput")

    monkeypatch.setattr(rule_cli, "run", boom)
    monkeypatch.delenv("TORCHPORT_DEBUG", raising=False)
    assert main(["rule", "--all"]) == 2
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: kaput" in err
    assert "Traceback" not in err
