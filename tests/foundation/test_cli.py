"""The command line: fast start, one-line errors with exit code 2, rule docs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchport.cli import main
from torchport.cli._common import terminal_columns


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


def test_the_listing_summaries_are_the_subcommands_own() -> None:
    from torchport.cli import SUBCOMMANDS, build_parser

    parser = build_parser()  # no command named: every module registers itself
    listed = {
        choice.dest: choice.help
        for action in parser._subparsers._group_actions  # type: ignore[union-attr]
        for choice in action._choices_actions  # type: ignore[attr-defined]
    }
    assert listed == SUBCOMMANDS


def _imported_by_check(folder: Path, *options: str) -> set[str]:
    """The modules ``check`` imports, beyond those the interpreter had at startup (a machine's
    site hooks, .pth files and editable installs may import shutil, tempfile or rich early)."""
    (folder / "t.py").write_text("x = 1\n", encoding="utf-8")
    probe = (
        "import sys\nbefore = set(sys.modules)\nfrom torchport.cli import main\n"
        f"assert main(['check', *{list(options)!r}, 't.py']) == 0\n"
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=folder
    )
    return set(out.stdout.strip().splitlines()[-1].split())


def test_check_imports_neither_other_subcommands_nor_unused_renderers(tmp_path: Path) -> None:
    loaded = _imported_by_check(tmp_path, "--output-format", "json")
    assert {"torchport.cli.check", "torchport.report.json_format"} <= loaded
    unexpected = {"torchport.cli.run", "torchport.cli.port", "torchport.cli.doctor",
                  "torchport.cli.bench", "torchport.report.sarif", "torchport.report.terminal",
                  "tomllib", "uuid", "traceback",
                  "shutil", "tempfile", "difflib"}  # fmt: skip
    assert unexpected.isdisjoint(loaded)


def test_text_output_to_a_pipe_imports_no_rich(tmp_path: Path) -> None:
    loaded = _imported_by_check(tmp_path)
    assert "torchport.report.terminal" in loaded
    assert not any(name.startswith("rich") for name in loaded)


def test_a_subcommand_given_is_fully_built_and_others_are_still_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "--no-such-option"]) == 2
    assert "--no-such-option" in capsys.readouterr().err
    assert main(["chek"]) == 2
    assert "invalid choice: 'chek'" in capsys.readouterr().err


@pytest.mark.parametrize("columns", [None, "57", "0", "-3", "wide", "250"])
def test_help_width_is_the_one_argparse_gets_from_shutil(
    columns: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns
