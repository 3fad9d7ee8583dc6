"""The steps of ``dev.py gpu``: what each runs, how it is run, and the figures read from it."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

Figures = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    argv: list[str]
    timeout: float
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    unset: tuple[str, ...] = ()  # variables removed from the environment it inherits
    cwd: Path | None = None
    # Key figures from the step's stdout and the files it wrote; may raise on bad output.
    figures: Callable[[str], Figures] = lambda stdout: {}
    # Why the step failed, from its exit code and figures; None when it passed.
    check: Callable[[int, Figures], str | None] = lambda code, figures: exit_problem(code)
    prepare: Callable[[], None] | None = None  # run just before (a file to copy, say)


@dataclasses.dataclass(frozen=True)
class Completed:
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float


@dataclasses.dataclass
class Result:
    name: str
    command: list[str]
    env: dict[str, str]
    exit_code: int | None
    seconds: float
    passed: bool
    figures: Figures
    log: str
    problem: str | None = None  # why it failed, in one line, when the exit code does not say


Runner = Callable[[Step], Completed]


def subprocess_runner(step: Step) -> Completed:
    """Run ``step`` in its own process group, so that a timeout also stops what it started."""
    env = {k: v for k, v in os.environ.items() if k not in step.unset}
    env.update(step.env)
    start = time.perf_counter()
    process = subprocess.Popen(
        step.argv,
        cwd=step.cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=step.timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        if os.name == "nt":
            process.kill()
        else:
            os.killpg(process.pid, signal.SIGKILL)  # torchrun's workers, a hung nvidia-smi
        out, err = process.communicate()
        code = None
    return Completed(code, out, err, time.perf_counter() - start)


def run_step(step: Step, runner: Runner, logs: Path) -> Result:
    """Run one step; whatever goes wrong becomes its result, never an exception."""
    log = logs / f"{step.name}.log"
    try:
        if step.prepare is not None:
            step.prepare()
        done = runner(step)
    except OSError as exc:
        return Result(step.name, step.argv, step.env, None, 0.0, False, {}, str(log), str(exc))
    log.write_text(
        f"$ {' '.join(step.argv)}\n--- stdout\n{done.stdout}\n--- stderr\n"
        f"{done.stderr}\n--- exit code {done.returncode}\n",
        encoding="utf-8",
    )
    figures: Figures = {}
    unreadable = None
    try:
        figures = step.figures(done.stdout)
    except (ValueError, KeyError, TypeError, OSError, ET.ParseError) as exc:
        unreadable = f"could not read its figures: {type(exc).__name__}: {exc}"
    problem = _problem(step, done, figures, unreadable)
    return Result(
        step.name,
        step.argv,
        step.env,
        done.returncode,
        round(done.seconds, 1),
        problem is None,
        figures,
        str(log),
        problem,
    )


def _problem(step: Step, done: Completed, figures: Figures, unreadable: str | None) -> str | None:
    """Why the step failed, in one line (with the last line it printed when it exited badly)."""
    if done.returncode is None:
        return f"killed after its {step.timeout:.0f} s timeout"
    if unreadable is None:
        problem = step.check(done.returncode, figures)
    else:
        problem = unreadable if done.returncode == 0 else f"exit code {done.returncode}"
    if problem is not None and done.returncode:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
        problem = f"{problem}: {tail[0][:300]}"
    return problem


def exit_problem(code: int, allowed: tuple[int, ...] = (0,)) -> str | None:
    return None if code in allowed else f"exit code {code}"


# --- figures -------------------------------------------------------------------------------


def junit_counts(path: Path) -> Figures:
    """Test counts (and the first failing tests) from a pytest ``--junitxml`` file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {
        k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")
    }
    failed = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
    bad = counts["failures"] + counts["errors"]
    return {
        "passed": counts["tests"] - bad - counts["skipped"],
        "failed": bad,
        "skipped": counts["skipped"],
        "failing_tests": failed[:30],
    }


def doctor_figures(stdout: str) -> Figures:
    report = json.loads(stdout)
    facts = report.get("facts", {})
    smoke = facts.get("raw_probe", {}).get("smoke", {})
    kept = ("torch", "torch_build", "cuda_runtime_of_wheel", "driver", "gpus", "accelerator")
    return {
        "verdict": report["verdict"],
        **{k: facts.get(k) for k in kept},
        "findings": sorted({f["code"] for f in report["findings"]}),
        "smoke": {k: smoke.get(k) for k in ("matmul", "h2d") if k in smoke},
    }


def transfer_figures(stdout: str) -> Figures:
    result = json.loads(stdout)
    return {"device": result["device"], "ceiling_gb_per_s": result["ceiling_gb_per_s"]}


def loader_figures(stdout: str) -> Figures:
    """The loader table as shares of the bound, and whether issue 13's goal is met."""
    result = json.loads(stdout)
    unavoidable = {r["regime"]: r["unavoidable_idle_share"] for r in result["regimes"]}
    table: dict[str, dict[str, Any]] = {}
    shares, idles = [], []
    for row in result["rows"]:
        table.setdefault(row["regime"], {})[row["mode"]] = round(row["share_of_bound"], 4)
        if row["mode"].startswith("DeviceLoader prefetch="):
            shares.append(row["share_of_bound"])
            if row["device_idle_share"] is not None:
                idles.append(row["device_idle_share"] - unavoidable[row["regime"]])
    worst_share, worst_idle = min(shares), (max(idles) if idles else None)
    goal = None if worst_idle is None else worst_share >= 0.95 and worst_idle <= 0.05
    return {
        "device": result["device"],
        "share_of_bound": table,
        "regimes": result["regimes"],
        "memory": result["memory"],
        "worst_deviceloader_share": worst_share,
        "worst_deviceloader_excess_idle": worst_idle,
        "goal_met": goal,
    }


def lines_or_json(stdout: str) -> Figures:
    """A benchmark's JSON output when it printed JSON, else its lines."""
    text = stdout.strip()
    if text.startswith(("{", "[")):
        return {"result": json.loads(text)}
    return {"lines": text.splitlines()[-40:]}


def run_report_figures(path: Path) -> Figures:
    """What the run report says about the loop: time waiting for batches against step time."""
    report = json.loads(path.read_text(encoding="utf-8"))
    loaders = report.get("facts", {}).get("loaders", [])
    keys = ("site", "loader", "batches", "wait_ms", "step_ms")
    return {
        "findings": sorted({f["code"] for f in report.get("findings", [])}),
        "loaders": [{k: loader.get(k) for k in keys} for loader in loaders],
    }
