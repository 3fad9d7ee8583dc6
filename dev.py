"""Developer entry point that needs nothing but Python: ``python3 dev.py demo|test|gates|check``.

Each command first makes sure ``.venv`` exists and holds the pinned development environment
(requirements-dev.txt + torchport in editable mode); it is rebuilt only when those files change.

Two commands take options and live in tools/devtasks/ (``python3 dev.py COMMAND --help``):
``wheelhouse`` fills .whl with the wheels a GPU machine needs (not torch), and ``gpu`` runs every
GPU check on a GPU machine, from those wheels and with its own torch, into one report.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".installed"
INPUTS = ("requirements-dev.txt", "pyproject.toml")


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for name in INPUTS:
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def _run(*argv: str | Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(str(a) for a in argv), flush=True)
    result = subprocess.run([str(a) for a in argv], cwd=ROOT, env=env, check=False)
    if result.returncode != 0:
        raise SystemExit(result.returncode)


def setup() -> None:
    """Create or refresh .venv when the pinned requirements or pyproject.toml changed."""
    fingerprint = _fingerprint()
    if STAMP.exists() and STAMP.read_text(encoding="utf-8") == fingerprint:
        return
    if not PYTHON.exists():
        print(f"creating {VENV.name} ...", flush=True)
        venv.create(VENV, with_pip=True)
    _run(PYTHON, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    _run(PYTHON, "-m", "pip", "install", "--quiet", "-r", "requirements-dev.txt")
    _run(PYTHON, "-m", "pip", "install", "--quiet", "--no-deps", "-e", ".")
    STAMP.write_text(fingerprint, encoding="utf-8")


def _tool(name: str) -> Path:
    return BIN / (f"{name}.exe" if os.name == "nt" else name)


def demo() -> None:
    _run(PYTHON, "-m", "torchport.demo")


def test() -> None:
    # One thread per process: the suite's timings are not asserted, and 2-core CI machines
    # thrash when every test process starts a thread per core.
    _run(PYTHON, "-m", "pytest", "-q", env={**os.environ, "OMP_NUM_THREADS": "1"})


def gates() -> None:
    _run(_tool("ruff"), "check", ".")
    _run(_tool("ruff"), "format", "--check", "src", "tests", "benchmarks", "tools", "dev.py")
    _run(_tool("mypy"))
    _run(_tool("lint-imports"))


def check() -> None:
    gates()
    test()


def wheelhouse(argv: list[str]) -> int:
    from devtasks import wheelhouse

    def pip() -> list[str]:
        setup()  # the pinned pip of .venv downloads for any target Python and platform
        return [str(PYTHON), "-m", "pip"]

    return wheelhouse.run(argv, ROOT, pip)


def gpu(argv: list[str]) -> int:
    from devtasks import gpu

    return gpu.run(argv, ROOT)  # its own environment, from the machine's torch: no setup()


def fuzz() -> None:
    # The property tests of tests/fuzz, random and long: TORCHPORT_FUZZ_EXAMPLES per property.
    env = {"TORCHPORT_FUZZ_EXAMPLES": "500", **os.environ, "OMP_NUM_THREADS": "1"}
    env["TORCHPORT_FUZZ"] = "1"
    _run(PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/fuzz", env=env)


COMMANDS = {"setup": lambda: None, "demo": demo, "test": test, "gates": gates, "check": check}
COMMANDS["fuzz"] = fuzz  # long property-based run of tests/fuzz (README, Development)
WITH_OPTIONS = {"wheelhouse": wheelhouse, "gpu": gpu}


def main(argv: list[str]) -> int:
    if argv and argv[0] in WITH_OPTIONS:
        sys.path.insert(0, str(ROOT / "tools"))
        return WITH_OPTIONS[argv[0]](argv[1:])
    if len(argv) != 1 or argv[0] not in COMMANDS:
        print(f"usage: python3 dev.py {{{'|'.join([*COMMANDS, *WITH_OPTIONS])}}}", file=sys.stderr)
        return 2
    setup()
    COMMANDS[argv[0]]()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
