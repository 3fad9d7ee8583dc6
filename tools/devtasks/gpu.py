"""``python3 dev.py gpu``: every GPU check of torchport on this machine, offline, in one report.

Uses the machine's own torch: a virtual environment (``--venv``, default .venv-gpu) sees the site
packages of the Python that runs dev.py, and torchport plus its test requirements are installed
into it from the wheel folder (``--wheels``, made by ``dev.py wheelhouse``) with ``--no-index``.
Then each step runs, whatever happened to the ones before it; ``--out DIR`` receives
gpu-report.md, gpu-report.json and one log per step. ``--step-timeout S`` stops each step after
S seconds at most, for a machine lent for minutes (its log keeps what it printed). Exit code:
0 when every step passed, 1 when one failed, 2 when the run could not start (no torch, no
wheels, an install that failed).

pytest runs with plugin autoloading off and torchport's plugin loaded by name: GPU images bring
their own plugins (pytest-benchmark warns under xdist, which ``filterwarnings = error`` turns into
a collection error), and nothing of theirs should decide what the suite reports.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

from devtasks import report
from devtasks.steps import (
    Result,
    Runner,
    Step,
    doctor_figures,
    exit_problem,
    junit_counts,
    lines_or_json,
    loader_figures,
    run_report_figures,
    run_step,
    subprocess_runner,
    transfer_figures,
)
from devtasks.wheelhouse import requirements

PYTEST = ["-m", "pytest", "-p", "torchport", "-p", "no:cacheprovider", "-q", "-ra"]
PYTEST_ISOLATED = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "OMP_NUM_THREADS": "1"}
PYTEST_FOREIGN = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")
EXAMPLE = Path("src/torchport/examples/cpu_training.py")


class SetupError(Exception):
    """The run cannot start; the message is the one line the user sees."""


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python3 dev.py gpu",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("gpu-report"),
        help="folder for the report and logs (default gpu-report; relative to the repository)",
    )
    parser.add_argument(
        "--wheels",
        type=Path,
        default=Path(".whl"),
        help="wheel folder from dev.py wheelhouse (default .whl)",
    )
    parser.add_argument(
        "--venv",
        type=Path,
        default=Path(".venv-gpu"),
        help="the environment to create or reuse (default .venv-gpu)",
    )
    parser.add_argument("--only", help="comma-separated step names, to rerun some of them")
    parser.add_argument(
        "--step-timeout",
        type=float,
        metavar="SECONDS",
        help="stop any step after this long (a step's own limit is 5 to 60 minutes): on a "
        "machine lent for a few minutes, a step cut short still leaves its output in its log",
    )
    args = parser.parse_args(argv)
    if args.step_timeout is not None and args.step_timeout <= 0:
        parser.error("--step-timeout: expected a positive number of seconds")
    return args


def steps(python: str, root: Path, out: Path) -> list[Step]:
    """Every step, in order; ``python`` is the environment's interpreter."""
    torchport = [python, "-m", "torchport"]
    ported = out / "ported"

    def pytest(name: str, *args: str, env: dict[str, str] | None = None) -> Step:
        junit = out / f"junit-{name}.xml"
        return Step(
            name,
            [python, *PYTEST, f"--junitxml={junit}", *args],
            timeout=3600,
            env={**PYTEST_ISOLATED, **(env or {})},
            unset=PYTEST_FOREIGN,
            cwd=root,
            figures=lambda _: junit_counts(junit),
        )

    def copy_example() -> None:
        ported.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / EXAMPLE, ported / EXAMPLE.name)

    return [
        Step(
            "doctor",
            [*torchport, "doctor", "--json"],
            600,
            cwd=root,
            figures=doctor_figures,
            check=_usable_gpu,
        ),
        # tests/port, the longest part, is its own step: not run twice, and rerun alone
        pytest("suite", "--ignore=tests/port"),
        pytest("cuda-sanitizer", "-m", "cuda", env={"TORCH_CUDA_SANITIZER": "1"}),
        pytest("port-corpus", "tests/port"),
        Step(
            "bench-transfer",
            [*torchport, "bench", "transfer", "--json"],
            900,
            cwd=root,
            figures=transfer_figures,
        ),
        Step(
            "bench-loader",
            [*torchport, "bench", "loader", "--json"],
            1800,
            cwd=root,
            figures=loader_figures,
        ),
        Step(
            "run-overhead",
            [python, "benchmarks/run_overhead.py", *_json_flag(python, root)],
            3600,
            cwd=root,
            figures=lines_or_json,
        ),
        Step(
            "gpu-overhead",
            [python, "benchmarks/gpu_overhead.py"],
            3600,
            cwd=root,
            figures=lines_or_json,
        ),
        Step(
            "ported-example-port",
            [*torchport, "port", "--write", EXAMPLE.name],
            300,
            cwd=ported,
            prepare=copy_example,
            check=_findings_allowed,
        ),
        Step(
            "ported-example-run",
            [
                *torchport,
                "run",
                "--output-format",
                "json",
                "--report",
                str(out / "ported-run.json"),
                EXAMPLE.name,
            ],
            900,
            cwd=ported,
            figures=lambda _: run_report_figures(out / "ported-run.json"),
            check=_findings_allowed,
        ),
    ]


def _usable_gpu(code: int, figures: dict[str, Any]) -> str | None:
    problem = exit_problem(code, allowed=(0, 1))  # 1: findings, which the report lists
    if problem is None and not figures["verdict"].startswith("GPU usable"):
        return f"no usable GPU: {figures['verdict']}"
    return problem


def _findings_allowed(code: int, figures: dict[str, Any]) -> str | None:
    return exit_problem(code, allowed=(0, 1))


def _json_flag(python: str, root: Path) -> list[str]:
    """``--json`` when the overhead benchmark offers it (another change may add it)."""
    try:
        done = subprocess.run(
            [python, "benchmarks/run_overhead.py", "--help"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return ["--json"] if "--json" in done.stdout else []


def probe_torch(python: str) -> str:
    """``torch.__version__`` of ``python``, or SetupError saying why there is none."""
    try:
        done = subprocess.run(
            [python, "-c", "import torch; print(torch.__version__)"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"cannot run {python}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SetupError(
            f"{python} has no usable torch ({last}); run dev.py with the Python whose torch "
            "this machine provides, e.g. /path/to/that/python3 dev.py gpu"
        )
    return done.stdout.strip()


def prepare(venv_dir: Path, wheels: Path, root: Path, logs: Path) -> str:
    """The environment's interpreter, with torchport and the test requirements installed."""
    if not any(wheels.glob("*.whl")):
        raise SetupError(
            f"no wheels in {wheels}: run `python3 dev.py wheelhouse --python-version "
            f"{sys.version_info.major}.{sys.version_info.minor}` on a machine with the package "
            "index and copy the folder here (or name it with --wheels)"
        )
    bindir = venv_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    if not python.exists():
        try:
            venv.EnvBuilder(system_site_packages=True, with_pip=True).create(venv_dir)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise SetupError(
                f"could not create {venv_dir}: {exc} (is python3-venv installed?)"
            ) from None
    _see_outer_site_packages(python)
    stamp = venv_dir / ".installed"
    fingerprint = _fingerprint(root, wheels)
    if not stamp.exists() or stamp.read_text(encoding="utf-8") != fingerprint:
        _install(str(python), wheels, root, logs)
        stamp.write_text(fingerprint, encoding="utf-8")
    return str(python)


def _see_outer_site_packages(python: Path) -> None:
    """Let the environment see this interpreter's packages too, after its own.

    ``system_site_packages`` reaches the base installation only; when dev.py runs from another
    virtual environment or a conda environment, torch lives in that one's site-packages.
    """
    here = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    found = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(found) / "_torchport_outer_site.pth").write_text("\n".join(here) + "\n", "utf-8")


def _fingerprint(root: Path, wheels: Path) -> str:
    digest = hashlib.sha256()
    for name in ("requirements-dev.txt", "pyproject.toml"):
        digest.update((root / name).read_bytes())
    digest.update("\n".join(sorted(p.name for p in wheels.glob("*.whl"))).encode())
    return digest.hexdigest()


def _install(python: str, wheels: Path, root: Path, logs: Path) -> None:
    version = subprocess.run(
        [python, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    needed, optional = requirements(root, version)
    pip = [python, "-m", "pip", "install", "--no-index", "--find-links", str(wheels)]
    commands = [[*pip, "-e", str(root)], [*pip, *needed]]
    # numpy only when the environment has none: the machine's torch came with its own.
    has_numpy = subprocess.run([python, "-c", "import numpy"], capture_output=True, check=False)
    if has_numpy.returncode != 0:
        commands.append([*pip, *optional])
    with (logs / "install.log").open("w", encoding="utf-8") as log:
        for command in commands:
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            done = subprocess.run(
                command, cwd=root, stdout=log, stderr=subprocess.STDOUT, check=False
            )
            if done.returncode != 0:
                raise SetupError(f"offline install failed (see {logs / 'install.log'})")


def _context(root: Path, torch_version: str) -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit or "unknown",
        "python": sys.version.split()[0],
        "torch": torch_version,
        "command": "python3 dev.py gpu",
    }


def run(
    argv: list[str], root: Path, runner: Runner = subprocess_runner, python: str = sys.executable
) -> int:
    """``dev.py gpu``; ``python`` is the interpreter whose torch is tested (dev.py's own)."""
    args = parse(argv)
    out = args.out if args.out.is_absolute() else root / args.out
    try:
        names = chosen_names(args.only)
        torch_version = probe_torch(python)
        (out / "logs").mkdir(parents=True, exist_ok=True)
        wheels = args.wheels if args.wheels.is_absolute() else root / args.wheels
        venv_dir = args.venv if args.venv.is_absolute() else root / args.venv
        env_python = prepare(venv_dir, wheels, root, out / "logs")
    except SetupError as exc:
        print(f"dev.py gpu: {exc}", file=sys.stderr)
        return 2
    chosen = capped([s for s in steps(env_python, root, out) if s.name in names], args.step_timeout)
    return execute(chosen, runner, out, _context(root, torch_version))


def capped(chosen: list[Step], limit: float | None) -> list[Step]:
    """The steps, each stopped after ``limit`` seconds at most (``--step-timeout``)."""
    if limit is None:
        return chosen
    return [dataclasses.replace(s, timeout=min(s.timeout, limit)) for s in chosen]


STEP_NAMES = (
    "doctor",
    "suite",
    "cuda-sanitizer",
    "port-corpus",
    "bench-transfer",
    "bench-loader",
    "run-overhead",
    "gpu-overhead",
    "ported-example-port",
    "ported-example-run",
)


def chosen_names(only: str | None) -> tuple[str, ...]:
    if not only:
        return STEP_NAMES
    names = tuple(n.strip() for n in only.split(",") if n.strip())
    unknown = [n for n in names if n not in STEP_NAMES]
    if unknown or not names:
        raise SetupError(
            f"--only: no step {', '.join(unknown) or repr(only)} (steps: {', '.join(STEP_NAMES)})"
        )
    return names


def execute(chosen: list[Step], runner: Runner, out: Path, context: dict[str, Any]) -> int:
    """Run every step (a failure does not stop the others), write the report, say where."""
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    for step in chosen:
        print(f"dev.py gpu: {step.name} ...", flush=True)
        result = run_step(step, runner, logs)
        results.append(result)
        status = "passed" if result.passed else f"FAILED ({result.problem})"
        print(f"dev.py gpu: {step.name} {status} in {result.seconds} s", flush=True)
    markdown, data = report.write(out, context, results)
    print(f"dev.py gpu: report in {markdown} and {data}")
    return 0 if all(r.passed for r in results) else 1
