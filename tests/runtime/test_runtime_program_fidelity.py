"""`torchport run X` is indistinguishable from `python X` for the program: each case is compared
with a real `python` subprocess, launched from the same folder with the same environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from torchport.cli import main

PROBE = """\
import json, sys
main = sys.modules["__main__"]
print(json.dumps({
    "file": __file__,
    "argv": sys.argv,
    "path": sys.path,
    "name": __name__,
    "package": __package__,
    "loader": type(__loader__).__name__,
    "spec": None if __spec__ is None else [__spec__.name, __spec__.origin],
    "cached": __cached__,
    "builtins": type(__builtins__).__name__,
    "globals": sorted(globals()),
    "main_is_this_module": main.__dict__ is globals(),
}))
"""
CONSOLE_SCRIPT = Path(sys.executable).with_name("torchport")
LAUNCHERS = {
    "console-script": [str(CONSOLE_SCRIPT)],
    "python-m": [sys.executable, "-m", "torchport"],
}


@pytest.fixture(params=sorted(LAUNCHERS))
def launcher(request: pytest.FixtureRequest) -> list[str]:
    if request.param == "console-script" and not CONSOLE_SCRIPT.exists():
        pytest.skip("no torchport console script beside this interpreter")
    return LAUNCHERS[request.param]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", **extra}


def _python(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=_env(**env), capture_output=True, text=True,
        check=False,
    )  # fmt: skip


def _torchport(
    launcher: list[str], args: list[str], cwd: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*launcher, "run", *args], cwd=cwd, env=_env(**env), capture_output=True, text=True,
        check=False,
    )  # fmt: skip


def _same_view(launcher: list[str], args: list[str], cwd: Path, **env: str) -> dict[str, object]:
    """What the program sees under python and under `torchport run` in a fresh process."""
    plain, observed = _python(args, cwd, **env), _torchport(launcher, args, cwd, **env)
    assert plain.returncode == observed.returncode == 0, observed.stderr
    assert json.loads(observed.stdout) == json.loads(plain.stdout)
    result: dict[str, object] = json.loads(plain.stdout)
    return result


@pytest.fixture
def in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Callable[[list[str], Path], tuple[int, str, str]]]:
    """`torchport run ARGS` in this process (torch is imported already: fast), from ``cwd``."""
    folders: list[str] = []

    def run(args: list[str], cwd: Path) -> tuple[int, str, str]:
        monkeypatch.chdir(cwd)
        folders.append(str(cwd))
        capsys.readouterr()
        code = main(["run", *args])
        out, err = capsys.readouterr()
        return code, out, err

    yield run
    for name, module in list(sys.modules.items()):  # the program's own (pkg, pkg.mod)
        if str(getattr(module, "__file__", None)).startswith(tuple(folders)):
            del sys.modules[name]


def _compare_in_process(
    run: Callable[[list[str], Path], tuple[int, str, str]], args: list[str], cwd: Path
) -> dict[str, Any]:
    """What the program sees under python, checked against `torchport run` in this process.

    sys.path is pytest's here beyond its first entry; the full list is compared in a fresh
    process by test_script_sees_the_same_sys_path_as_under_python.
    """
    plain = _python(args, cwd)
    code, out, err = run(args, cwd)
    assert plain.returncode == code == 0, err
    seen, expected = json.loads(out), json.loads(plain.stdout)
    assert seen.pop("path")[0] == expected.pop("path")[0]
    assert seen == expected
    result: dict[str, Any] = json.loads(plain.stdout)
    return result


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "prog.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "mod.py").write_text(PROBE, encoding="utf-8")
    with zipfile.ZipFile(tmp_path / "app.zip", "w") as archive:
        archive.writestr("__main__.py", PROBE)
    return tmp_path


def test_script_sees_the_same_sys_path_as_under_python(launcher: list[str], tree: Path) -> None:
    view = _same_view(launcher, ["sub/prog.py"], tree)
    paths = view["path"]
    assert isinstance(paths, list) and paths[0] == str(tree / "sub")
    assert str(CONSOLE_SCRIPT.parent) not in paths  # the launcher's own folder is not added


@pytest.mark.skipif(sys.version_info < (3, 11), reason="PYTHONSAFEPATH is new in 3.11")
def test_safe_path_adds_no_entry_as_in_python(tree: Path) -> None:
    launcher = LAUNCHERS["console-script" if CONSOLE_SCRIPT.exists() else "python-m"]
    view = _same_view(launcher, ["sub/prog.py"], tree, PYTHONSAFEPATH="1")
    assert isinstance(view["path"], list) and str(tree / "sub") not in view["path"]


@pytest.mark.parametrize("script", ["sub/prog.py", "./sub/../sub/prog.py"])
def test_script_sees_an_absolute_file_and_pythons_main_globals(
    in_process: Callable[[list[str], Path], tuple[int, str, str]], tree: Path, script: str
) -> None:
    view = _compare_in_process(in_process, [script, "a"], tree)
    assert view["file"] == os.path.join(str(tree), script)
    assert view["argv"] == [script, "a"] and view["path"][0] == str(tree / "sub")
    assert view["builtins"] == "module" and view["main_is_this_module"] is True


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_symlinked_script_gets_its_real_folder_on_sys_path(
    in_process: Callable[[list[str], Path], tuple[int, str, str]],
    tree: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    elsewhere = tmp_path_factory.mktemp("links")
    (elsewhere / "link.py").symlink_to(tree / "sub" / "prog.py")
    view = _compare_in_process(in_process, ["link.py"], elsewhere)
    assert view["file"] == str(elsewhere / "link.py") and view["path"][0] == str(tree / "sub")


@pytest.mark.parametrize("target", ["app", "app/", "app.zip"])
def test_folder_or_zip_with_a_main_module_runs_as_python_runs_it(
    in_process: Callable[[list[str], Path], tuple[int, str, str]], tree: Path, target: str
) -> None:
    view = _compare_in_process(in_process, [target], tree)
    assert view["name"] == "__main__" and view["spec"] is not None
    assert view["path"][0] == os.path.join(str(tree), target)


def test_module_mode_matches_python_m(
    in_process: Callable[[list[str], Path], tuple[int, str, str]], tree: Path
) -> None:
    view = _compare_in_process(in_process, ["-m", "pkg.mod", "x"], tree)
    assert view["argv"] == [str(tree / "pkg" / "mod.py"), "x"] and view["path"][0] == str(tree)


def test_traceback_names_the_absolute_path_as_python_does(
    in_process: Callable[[list[str], Path], tuple[int, str, str]], tree: Path
) -> None:
    (tree / "sub" / "boom.py").write_text("def f():\n    1 / 0\nf()\n", encoding="utf-8")
    plain = _python(["sub/boom.py"], tree)
    code, _, err = in_process(["sub/boom.py"], tree)
    assert plain.returncode == code == 1
    assert f'File "{tree / "sub" / "boom.py"}", line 2, in f' in plain.stderr
    assert err.startswith(plain.stderr)


@pytest.mark.parametrize("module", ["nonexist.mod", "pkg"])
def test_module_that_cannot_be_run_is_pythons_one_line(
    in_process: Callable[[list[str], Path], tuple[int, str, str]], tree: Path, module: str
) -> None:
    plain = _python(["-m", module], tree)
    code, _, err = in_process(["-m", module], tree)
    assert plain.returncode == code == 1
    assert plain.stderr.count("\n") == 1 and "No module named" in plain.stderr
    assert err.startswith(plain.stderr) and "Traceback" not in err


@pytest.mark.parametrize("stream", ["stderr", "stdout"])
def test_script_that_closes_a_standard_stream_keeps_its_exit_code(tree: Path, stream: str) -> None:
    launcher = LAUNCHERS["console-script" if CONSOLE_SCRIPT.exists() else "python-m"]
    script = tree / "closes.py"
    script.write_text(f"import sys\nprint('out')\nsys.{stream}.close()\n", encoding="utf-8")
    plain = _python([str(script)], tree)
    observed = _torchport(launcher, [str(script)], tree)
    assert plain.returncode == observed.returncode == 0, observed.stderr
    assert observed.stdout == plain.stdout == "out\n"
    assert "internal error" not in observed.stderr
    if stream == "stderr":
        assert "No findings." in observed.stderr  # the report still reaches file descriptor 2


def test_folder_without_a_main_module_is_a_usage_error(
    in_process: Callable[[list[str], Path], tuple[int, str, str]], tree: Path
) -> None:
    (tree / "empty").mkdir()
    code, _, err = in_process(["empty"], tree)
    assert code == 2
    assert err.strip().splitlines() == [
        "torchport: error: torchport run: can't find '__main__' module in 'empty'"
    ]
