"""dev.py gpu on a machine without a GPU: arguments, setup errors, steps, runner and report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from devtasks import gpu, steps
from devtasks.steps import Completed, Step

ROOT = Path(__file__).resolve().parents[2]


def _fake_python_without_torch(tmp_path: Path) -> str:
    script = tmp_path / "python-without-torch"
    code = "import sys; sys.modules['torch'] = None; exec(sys.argv[1])"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "{code}" "$2"\n', encoding="utf-8")
    script.chmod(0o755)
    return str(script)


POSIX = pytest.mark.skipif(os.name == "nt", reason="a shell script and process groups")


@POSIX
def test_without_torch_it_says_so_in_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python = _fake_python_without_torch(tmp_path)
    assert gpu.run(["--out", str(tmp_path / "out")], ROOT, python=python) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"dev.py gpu: {python} has no usable torch (")
    assert "run dev.py with the Python whose torch this machine provides" in line
    assert not (tmp_path / "out").exists()


def test_without_wheels_it_names_the_command_that_makes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--out", str(tmp_path / "out"), "--wheels", str(tmp_path / "none")]
    assert gpu.run(argv, ROOT) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert f"no wheels in {tmp_path / 'none'}: run `python3 dev.py wheelhouse" in line


def test_an_unknown_step_is_a_usage_error_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gpu.run(["--only", "suite,bogus", "--out", str(tmp_path / "o")], ROOT) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("dev.py gpu: --only: no step bogus (steps: doctor, suite")
    assert not (tmp_path / "o").exists()


def test_help_starts_without_the_development_environment() -> None:
    done = subprocess.run(
        ["python3", str(ROOT / "dev.py"), "gpu", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
    )
    assert done.returncode == 0, done.stderr
    assert "--out" in done.stdout and "--wheels" in done.stdout


def test_the_steps_are_the_ones_issue_13_asks_for_and_pytest_runs_isolated(
    tmp_path: Path,
) -> None:
    listed = gpu.steps(sys.executable, ROOT, tmp_path)
    assert tuple(s.name for s in listed) == gpu.STEP_NAMES
    by_name = {s.name: s for s in listed}
    assert by_name["doctor"].argv[-2:] == ["doctor", "--json"]
    for name in ("suite", "cuda-sanitizer", "port-corpus"):
        step = by_name[name]
        assert step.argv[1:6] == ["-m", "pytest", "-p", "torchport", "-p"]
        assert step.env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
        assert "PYTEST_ADDOPTS" in step.unset
    assert by_name["cuda-sanitizer"].env["TORCH_CUDA_SANITIZER"] == "1"
    assert by_name["cuda-sanitizer"].argv[-2:] == ["-m", "cuda"]
    assert by_name["port-corpus"].argv[-1] == "tests/port"
    assert by_name["bench-loader"].argv[-3:] == ["bench", "loader", "--json"]
    assert by_name["run-overhead"].argv[1] == "benchmarks/run_overhead.py"
    assert by_name["gpu-overhead"].argv[1] == "benchmarks/gpu_overhead.py"


FOREIGN_PLUGIN = """\
import warnings


def pytest_configure(config):
    warnings.warn(UserWarning("benchmarks are disabled under xdist"))
"""


def test_the_suites_pytest_is_immune_to_a_plugin_the_machine_brings(tmp_path: Path) -> None:
    # What broke collection on the GPU image: a plugin that warns, under filterwarnings = error.
    site = tmp_path / "site"
    (site / "foreign-0.1.dist-info").mkdir(parents=True)
    (site / "foreign.py").write_text(FOREIGN_PLUGIN, encoding="utf-8")
    (site / "foreign-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: foreign\nVersion: 0.1\n", encoding="utf-8"
    )
    (site / "foreign-0.1.dist-info" / "entry_points.txt").write_text(
        "[pytest11]\nforeign = foreign\n", encoding="utf-8"
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n", encoding="utf-8")
    (project / "test_ok.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
    [suite] = [s for s in gpu.steps(sys.executable, ROOT, tmp_path) if s.name == "suite"]
    # This suite itself runs isolated under dev.py gpu: the plain run must not inherit that.
    outer = ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")
    env = {k: v for k, v in os.environ.items() if k not in outer}
    env["PYTHONPATH"] = str(site)
    plain = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    isolated = subprocess.run(
        suite.argv,
        cwd=project,
        env={**env, **suite.env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert plain.returncode != 0 and "benchmarks are disabled" in plain.stdout + plain.stderr
    assert isolated.returncode == 0, isolated.stdout + isolated.stderr
    assert steps.junit_counts(tmp_path / "junit-suite.xml")["passed"] == 1


def _fake(code: int | None, stdout: str = "", stderr: str = "") -> Completed:
    return Completed(code, stdout, stderr, 1.5)


def test_a_failing_step_does_not_stop_the_others_and_the_report_says_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = {
        "ok": _fake(0, json.dumps({"device": "H100", "ceiling_gb_per_s": {"host->device": 54.2}})),
        "crash": _fake(1, "", "RuntimeError: CUDA error: invalid device ordinal\n"),
        "hang": _fake(None, "partial"),
        "garbled": _fake(0, "not json"),
        "last": _fake(0, json.dumps({"device": "H100", "ceiling_gb_per_s": {}})),
    }
    ran: list[str] = []

    def runner(step: Step) -> Completed:
        ran.append(step.name)
        return outcomes[step.name]

    chosen = [Step(name, ["x", name], 10, figures=steps.transfer_figures) for name in outcomes]
    code = gpu.execute(chosen, runner, tmp_path, {"torch": "2.11.0+cu130"})
    assert code == 1 and ran == list(outcomes)
    data = json.loads((tmp_path / "gpu-report.json").read_text(encoding="utf-8"))
    by_name = {s["name"]: s for s in data["steps"]}
    assert data["passed"] is False and data["torch"] == "2.11.0+cu130"
    assert [by_name[n]["passed"] for n in outcomes] == [True, False, False, False, True]
    crash = "exit code 1: RuntimeError: CUDA error: invalid device ordinal"
    assert by_name["crash"]["problem"] == crash
    assert by_name["hang"]["problem"] == "killed after its 10 s timeout"
    assert by_name["garbled"]["problem"].startswith("could not read its figures: JSONDecodeError")
    assert by_name["ok"]["figures"]["ceiling_gb_per_s"] == {"host->device": 54.2}
    markdown = (tmp_path / "gpu-report.md").read_text(encoding="utf-8")
    assert "- result: 2 of 5 steps passed" in markdown
    assert "| ok | yes | 0 | 1.5 | host->device 54.2 GB/s |" in markdown
    assert "| hang | **no** | None | 1.5 | killed after its 10 s timeout |" in markdown
    assert (tmp_path / "logs" / "crash.log").read_text(encoding="utf-8").startswith("$ x crash")
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"dev.py gpu: report in {tmp_path / 'gpu-report.md'} and {tmp_path / 'gpu-report.json'}"
    )


def test_every_step_passing_exits_0(tmp_path: Path) -> None:
    chosen = [Step("a", ["a"], 10), Step("b", ["b"], 10)]
    assert gpu.execute(chosen, lambda step: _fake(0), tmp_path, {}) == 0
    assert json.loads((tmp_path / "gpu-report.json").read_text(encoding="utf-8"))["passed"]


def test_doctor_passes_only_with_a_usable_gpu() -> None:
    usable = {"verdict": "GPU usable: NVIDIA H100 80GB HBM3 (cuda:0)"}
    assert gpu._usable_gpu(1, usable) is None  # findings (TP529 TF32, say) are listed, not fatal
    assert gpu._usable_gpu(0, {"verdict": "No accelerator found; running on CPU."}) == (
        "no usable GPU: No accelerator found; running on CPU."
    )
    assert gpu._usable_gpu(2, usable) == "exit code 2"


@POSIX
def test_the_real_runner_stops_a_step_and_what_it_started_at_the_timeout(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "child-still-running"
    child = f"import time, pathlib; time.sleep(3); pathlib.Path({str(marker)!r}).touch()"
    parent = textwrap.dedent(
        f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", {child!r}])
        time.sleep(60)
        """
    )
    done = steps.subprocess_runner(Step("hang", [sys.executable, "-c", parent], timeout=1))
    assert done.returncode is None and done.seconds < 30
    subprocess.run([sys.executable, "-c", "import time; time.sleep(4)"], check=True)
    assert not marker.exists()


def test_the_suite_leaves_the_port_corpus_to_its_own_step(tmp_path: Path) -> None:
    by_name = {s.name: s for s in gpu.steps(sys.executable, ROOT, tmp_path)}
    assert "--ignore=tests/port" in by_name["suite"].argv
    assert "--ignore=tests/port" not in by_name["port-corpus"].argv


def test_step_timeout_caps_every_step_and_must_be_positive(tmp_path: Path) -> None:
    args = gpu.parse(["--step-timeout", "240"])
    capped = gpu.capped(gpu.steps(sys.executable, ROOT, tmp_path), args.step_timeout)
    assert max(s.timeout for s in capped) == 240
    assert min(s.timeout for s in capped) <= 240
    with pytest.raises(SystemExit) as exit_info:
        gpu.parse(["--step-timeout", "0"])
    assert exit_info.value.code == 2
