"""File discovery: gitignore matching stays linear on hostile patterns; unreadable folders are
reported, never skipped silently."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from torchport.analyze import files
from torchport.analyze.files import compile_pattern, discover, ignored
from torchport.cli import main


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real: Callable[[files.Segment, str], bool] = files.match_name

    def counted(tokens: files.Segment, name: str) -> bool:
        calls[0] += 1
        return real(tokens, name)

    monkeypatch.setattr(files, "match_name", counted)
    return calls


def test_many_double_star_segments_on_a_deep_path_take_linear_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # With a backtracking regex this pair ran for minutes (each ``**/`` may take any number of
    # the 40 folders); now each (pattern position, path component) pair is tried at most once.
    pattern = compile_pattern("**/" * 25 + "x.py", tmp_path)
    assert pattern is not None
    deep = tmp_path.joinpath(*["d"] * 40, "y.py")
    calls = _counting(monkeypatch)
    assert not ignored([pattern], deep, False)
    assert calls[0] <= (len(pattern.segments) + 1) * 41


def test_many_stars_in_one_name_take_quadratic_work_at_most(tmp_path: Path) -> None:
    # ``*a*a*…b`` against a long run of ``a`` is exponential for a backtracking regex.
    pattern = compile_pattern("*a" * 30 + "b", tmp_path)
    assert pattern is not None
    assert not ignored([pattern], tmp_path / ("a" * 250), False)
    assert ignored([pattern], tmp_path / ("a" * 250 + "b"), False)


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "expected"),
    [
        ("a/**", "a/b/c.py", False, True),
        ("a/**", "a", True, False),
        ("**/b.py", "b.py", False, True),
        ("**/b.py", "x/y/b.py", False, True),
        ("a/**/b.py", "a/b.py", False, True),
        ("a/**/b.py", "a/x/y/b.py", False, True),
        ("a/**/b.py", "c/a/b.py", False, False),
        ("x*y*z.py", "x_y_z.py", False, True),
        ("x*y*z.py", "x/y/z.py", False, False),
        ("[]x].py", "].py", False, True),
        ("[!a-c].py", "b.py", False, False),
        ("[!a-c].py", "d.py", False, True),
        ("\\*.py", "*.py", False, True),
        ("\\*.py", "a.py", False, False),
        ("foo**bar.py", "foo_x_bar.py", False, True),
    ],
)
def test_gitignore_globs_keep_git_semantics(
    tmp_path: Path, pattern: str, path: str, is_dir: bool, expected: bool
) -> None:
    compiled = compile_pattern(pattern, tmp_path)
    assert compiled is not None
    assert ignored([compiled], tmp_path / path, is_dir) is expected


def _deny(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    # The suite may run as root, where chmod 000 does not stop reading: make scandir refuse.
    real = os.scandir

    def scandir(path: str | os.PathLike[str]) -> object:
        if Path(path) == folder:
            raise PermissionError(13, "Permission denied", str(folder))
        return real(path)

    monkeypatch.setattr(files.os, "scandir", scandir)


def test_discover_reports_a_folder_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    (tmp_path / "secret").mkdir()
    _deny(monkeypatch, tmp_path / "secret")
    problems: list[tuple[Path, str]] = []
    found = list(discover([tmp_path], [], problems=problems))
    assert found == [tmp_path / "ok.py"]
    assert problems == [(tmp_path / "secret", "cannot read folder: Permission denied")]


def test_check_names_an_unreadable_folder_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    (tmp_path / "secret").mkdir()
    _deny(monkeypatch, tmp_path / "secret")
    assert main(["check", "--select", "TP101", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'secret'}: cannot read folder: Permission denied" in err
