"""[tool.torchport]: discovery by walking up, strict validation naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchport.cli import main
from torchport.config import Config, find_pyproject, load
from torchport.errors import ConfigError
from torchport.findings import Severity


def _project(tmp_path: Path, body: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(body, encoding="utf-8")
    pkg = tmp_path / "pkg" / "sub"
    pkg.mkdir(parents=True)
    return pkg


def test_config_is_found_by_walking_up_past_pyprojects_without_a_section(tmp_path: Path) -> None:
    pkg = _project(tmp_path, '[tool.torchport]\nselect = ["TP1"]\n')
    (tmp_path / "pkg" / "pyproject.toml").write_text("[project]\nname='x'\n", encoding="utf-8")
    assert find_pyproject(pkg) == (tmp_path / "pyproject.toml").resolve()
    config = load(pkg)
    assert config.select == ("TP1",)


def test_no_config_gives_defaults(tmp_path: Path) -> None:
    assert load(tmp_path) == Config()


def test_selection_ignore_and_per_file_ignores(tmp_path: Path) -> None:
    pkg = _project(
        tmp_path,
        "[tool.torchport]\n"
        'select = ["TP1", "TP2"]\nignore = ["TP102"]\nfail-on = "error"\n'
        '[tool.torchport.per-file-ignores]\n"tests/*" = ["TP2"]\n',
    )
    config = load(pkg)
    assert config.fail_on is Severity.ERROR
    assert config.enabled("TP101")
    assert not config.enabled("TP102")
    assert not config.enabled("TP301")
    assert config.enabled("TP201", str(tmp_path / "src" / "a.py"))
    assert not config.enabled("TP201", str(tmp_path / "tests" / "a.py"))


@pytest.mark.parametrize(
    ("body", "key", "problem"),
    [
        ('[tool.torchport]\nselekt = ["TP1"]\n', "selekt", "unknown key"),
        ('[tool.torchport]\nselect = "TP1"\n', "select", "list of strings"),
        ('[tool.torchport]\nignore = ["E501"]\n', "ignore", "not a rule code"),
        ('[tool.torchport]\nfail-on = "fatal"\n', "fail-on", "unknown severity"),
        ("[tool.torchport]\nper-file-ignores = 3\n", "per-file-ignores", "table"),
        ("[tool.torchport\nselect = 1\n", None, "not valid TOML"),
    ],
)
def test_invalid_config_names_file_and_key(
    tmp_path: Path, body: str, key: str | None, problem: str
) -> None:
    pkg = _project(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load(pkg)
    message = str(info.value)
    assert "pyproject.toml" in message
    assert problem in message
    if key:
        assert key in message


@pytest.mark.parametrize(
    ("body", "key", "problem"),
    [
        ('[tool.torchport]\nselect = ["TP999"]\n', "select", "'TP999' matches no rule"),
        ('[tool.torchport]\nextend-select = ["TP9"]\n', "extend-select", "'TP9' matches no rule"),
        ('[tool.torchport]\nignore = ["TP60"]\n', "ignore", "'TP60' matches no rule"),
        (
            '[tool.torchport.per-file-ignores]\n"t/*" = ["TP199", "TP998"]\n',
            "per-file-ignores",
            "'TP998' matches no rule",
        ),
    ],
)
def test_a_selector_that_matches_no_rule_is_an_error_naming_it(
    tmp_path: Path, body: str, key: str, problem: str
) -> None:
    pkg = _project(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load(pkg)
    assert key in str(info.value) and problem in str(info.value)


@pytest.mark.parametrize("flag", ["--select", "--extend-select", "--ignore"])
def test_an_unknown_code_on_the_command_line_is_exit_2_naming_it(
    tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    assert main(["check", flag, "TP101,TP999", str(tmp_path / "a.py")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'TP999' matches no rule" in err


def test_dotted_keys_under_tool_are_read(tmp_path: Path) -> None:
    pkg = _project(tmp_path, '[tool]\ntorchport.select = ["TP2"]\ntorchport.fail-on = "error"\n')
    config = load(pkg)
    assert config.select == ("TP2",) and config.fail_on is Severity.ERROR
    top = tmp_path / "top"
    top.mkdir()
    (top / "pyproject.toml").write_text('tool.torchport.ignore = ["TP101"]\n', encoding="utf-8")
    assert load(top).ignore == ("TP101",)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("tool = 5\n# [tool.torchport]\n", "`tool` must be a table, not int"),
        ('[tool]\ntorchport = "all"\n', "must be a table, not str"),
        ("[tool.torchport]\nselect = [\n", "not valid TOML"),
        ('name = "torchport"\nx = = 1\n', "not valid TOML"),
    ],
)
def test_a_malformed_pyproject_is_a_one_line_config_error_naming_the_file(
    tmp_path: Path, body: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = _project(tmp_path, body)
    (pkg / "a.py").write_text("x = 1\n", encoding="utf-8")
    assert main(["check", str(pkg / "a.py")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert str(tmp_path / "pyproject.toml") in err and problem in err
