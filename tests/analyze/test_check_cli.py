"""``torchport check`` as users run it: selection, noqa, config, files, fixes, formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchport.cli import main

BAD = """import torch

state = torch.load("model.pt")
x = torch.randn(3)
x.to("cuda")
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    return tmp_path


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, object]]]:
    code = main(["check", "--output-format", "json", *args])
    return code, json.loads(capsys.readouterr().out)["findings"]


def _codes(findings: list[dict[str, object]]) -> set[tuple[object, object]]:
    return {(f["code"], f["line"]) for f in findings}


def test_findings_give_exit_code_one_and_name_file_and_line(project: Path, capsys) -> None:
    assert main(["check", "train.py"]) == 1
    out = capsys.readouterr().out
    assert "train.py:3:9: TP107" in out
    assert "train.py:5:1: TP101" in out


def test_default_path_is_the_current_folder_and_exit_zero_wins(project: Path, capsys) -> None:
    assert main(["check", "--exit-zero"]) == 0
    assert "TP107" in capsys.readouterr().out


def test_clean_file_exits_zero(project: Path, capsys) -> None:
    (project / "train.py").write_text("import torch\n", encoding="utf-8")
    assert main(["check"]) == 0


def test_select_ignore_and_extend_select_take_codes_and_prefixes(project: Path, capsys) -> None:
    assert _codes(_json(capsys, "--select", "TP107")[1]) == {("TP107", 3)}
    assert _json(capsys, "--ignore", "TP1")[1] == []
    found = _codes(_json(capsys, "--select", "TP3", "--extend-select", "TP101")[1])
    assert found == {("TP101", 5)}


def test_unknown_selector_is_a_usage_error(project: Path, capsys) -> None:
    assert main(["check", "--select", "XYZ"]) == 2
    assert "XYZ" in capsys.readouterr().err


def test_noqa_with_code_bare_noqa_and_file_level_opt_out(project: Path, capsys) -> None:
    source = BAD.replace('"model.pt")', '"model.pt")  # noqa: TP101').replace(
        'x.to("cuda")', 'x.to("cuda")  # noqa'
    )
    (project / "train.py").write_text(source, encoding="utf-8")
    assert _codes(_json(capsys)[1]) == {("TP107", 3)}
    (project / "train.py").write_text(source.replace("TP101", "TP107"), encoding="utf-8")
    assert _json(capsys)[1] == []
    (project / "train.py").write_text("# torchport: noqa\n" + BAD, encoding="utf-8")
    assert _json(capsys)[1] == []


def test_per_file_ignores_from_pyproject(project: Path, capsys) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.torchport]\nper-file-ignores = {"train.py" = ["TP107"]}\n', encoding="utf-8"
    )
    assert _codes(_json(capsys)[1]) == {("TP101", 5), ("TP109", 5)}


def test_gitignore_and_exclude_skip_files(project: Path, capsys) -> None:
    (project / ".git").mkdir()
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text(BAD, encoding="utf-8")
    (project / "keep.py").write_text(BAD, encoding="utf-8")
    (project / ".gitignore").write_text("build/\n*.py\n!keep.py\n", encoding="utf-8")
    files = {f["path"] for f in _json(capsys)[1]}
    assert files == {"keep.py"}
    (project / ".gitignore").unlink()
    files = {f["path"] for f in _json(capsys, "--exclude", "build/", "--exclude", "keep.py")[1]}
    assert files == {"train.py"}


def test_bad_files_are_reported_one_by_one_and_the_rest_is_checked(project: Path, capsys) -> None:
    (project / "broken.py").write_text("def f(:\n", encoding="utf-8")
    (project / "latin.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    (project / "blob.py").write_bytes(b"\x00\x01\x02")
    (project / "empty.py").write_text("", encoding="utf-8")
    code, findings = _json(capsys)
    assert code == 1
    problems = {f["path"]: f["message"] for f in findings if f["code"] == "TP100"}
    assert set(problems) == {"broken.py", "latin.py", "blob.py"}
    assert "syntax error" in str(problems["broken.py"])
    assert "UTF-8" in str(problems["latin.py"])
    assert "binary" in str(problems["blob.py"])
    assert ("TP107", 3) in _codes(findings)


def test_fix_applies_safe_fixes_only_unless_unsafe_fixes(project: Path, capsys) -> None:
    (project / "train.py").write_text(BAD + "y = torch.zeros(3).to('cuda')\n", encoding="utf-8")
    assert main(["check", "--fix", "--select", "TP101,TP104,TP107"]) == 1
    text = (project / "train.py").read_text(encoding="utf-8")
    assert "torch.zeros(3, device='cuda')" in text  # TP104 is safe
    assert 'x.to("cuda")\n' in text and "map_location" not in text
    capsys.readouterr()
    assert main(["check", "--fix", "--unsafe-fixes", "--show-fixes"]) in (0, 1)
    out = capsys.readouterr().out
    assert "TP107" in out and "fixes applied" in out
    text = (project / "train.py").read_text(encoding="utf-8")
    assert 'map_location="cpu"' in text and 'x = x.to("cuda")' in text
    main(["check", "--fix", "--unsafe-fixes"])
    assert (project / "train.py").read_text(encoding="utf-8") == text


def test_diff_prints_changes_and_writes_nothing(project: Path, capsys) -> None:
    assert main(["check", "--diff", "--unsafe-fixes"]) == 1
    out = capsys.readouterr().out
    assert '+state = torch.load("model.pt", map_location="cpu")' in out
    assert (project / "train.py").read_text(encoding="utf-8") == BAD


def test_parallel_jobs_report_the_same_findings(project: Path, capsys) -> None:
    for i in range(4):
        (project / f"m{i}.py").write_text(BAD, encoding="utf-8")
    assert _json(capsys, "-j", "2")[1] == _json(capsys, "-j", "1")[1]


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_other_output_formats_carry_the_findings(project: Path, capsys, fmt: str) -> None:
    assert main(["check", "--output-format", fmt]) == 1
    out = capsys.readouterr().out
    assert "TP107" in out
    if fmt == "sarif":
        json.loads(out)


def test_statistics_counts_findings_per_rule(project: Path, capsys) -> None:
    assert main(["check", "--statistics"]) == 1
    out = capsys.readouterr().out
    assert "TP107" in out and "torch-load-without-map-location" in out
    assert "train.py:3" not in out


def test_missing_path_is_a_usage_error(project: Path, capsys) -> None:
    assert main(["check", "nowhere.py"]) == 2
    assert "nowhere.py" in capsys.readouterr().err
