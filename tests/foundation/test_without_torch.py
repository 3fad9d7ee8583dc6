"""torch is not a dependency: check and port work without it, and what needs it says so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "torchport" / "examples" / "cpu_training.py"
# Runs the CLI (or pytest) in an interpreter where `import torch` raises ImportError.
WITHOUT_TORCH = "import sys; sys.modules['torch'] = None; "
CLI = "import sys; from torchport.cli import main; raise SystemExit(main(sys.argv[1:]))"


def _run(
    code: str, *args: str, path: Path | None = None, only_our_plugin: bool = False
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    if path is not None:  # a fake torch package that shadows the real one
        env["PYTHONPATH"] = str(path)
    if only_our_plugin:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip


def _fake_torch(tmp_path: Path, body: str) -> Path:
    package = tmp_path / "fake" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(body, encoding="utf-8")
    return package.parent


def test_check_and_port_need_no_torch(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    check = _run(WITHOUT_TORCH + CLI, "check", str(script))
    port = _run(WITHOUT_TORCH + CLI, "port", str(script))
    assert check.returncode == 1 and "TP106" in check.stdout, check.stderr
    assert port.returncode == 0 and "+    model = Classifier().to(device)" in port.stdout


@pytest.mark.parametrize("command", [["run", "train.py"], ["bench", "transfer"]])
def test_commands_that_need_torch_say_so_in_one_line(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "train.py").write_text("print('ran')\n", encoding="utf-8")
    argv = [str(tmp_path / a) if a.endswith(".py") else a for a in command]
    result = _run(WITHOUT_TORCH + CLI, *argv)
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert f"torchport {command[0]}" in line and "needs PyTorch" in line
    assert "pip install torch" in line


def test_a_torch_that_fails_to_load_is_named_with_its_error(tmp_path: Path) -> None:
    broken = _fake_torch(
        tmp_path, "raise OSError('libcudart.so.12: cannot open shared object file')\n"
    )
    result = _run(CLI, "bench", "loader", path=broken)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert "libcudart.so.12: cannot open shared object file" in line
    assert "torchport doctor" in line


def test_a_torch_older_than_2_4_is_refused(tmp_path: Path) -> None:
    old = _fake_torch(tmp_path, "__version__ = '2.3.1+cu121'\n")
    (tmp_path / "train.py").write_text("print('ran')\n", encoding="utf-8")
    result = _run(CLI, "run", str(tmp_path / "train.py"), path=old)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "torchport: error: torchport run needs torch >= 2.4; this environment has torch 2.3.1+cu121"
    )


def test_pytest_plugin_imports_no_torch_until_asked(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_ok():\n    assert True\n", encoding="utf-8")
    pytest_main = "import pytest; raise SystemExit(pytest.main(sys.argv[1:]))"
    # torchport's plugin alone (through its entry point): a plugin the machine happens to have
    # installed must not be what imports torch here.
    common = ["-p", "torchport", "-p", "no:cacheprovider", "-q", str(tmp_path / "test_plain.py")]
    plain = _run(WITHOUT_TORCH + pytest_main, *common, only_our_plugin=True)
    asked = _run(WITHOUT_TORCH + pytest_main, "--torchport", *common, only_our_plugin=True)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "1 passed" in plain.stdout
    assert asked.returncode == pytest.ExitCode.USAGE_ERROR
    assert "pytest --torchport needs PyTorch" in asked.stderr
