"""[tool.torchport]: discovery by walking up, strict validation naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

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
