"""`torchport doctor` end to end: the real run on this machine, and fake probes via the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from doctor_fakes import gpu_machine

from torchport.cli import main
from torchport.doctor import probes
from torchport.doctor.verdict import CPU_VERDICT

NO_ACCELERATOR = not torch.cuda.is_available() and not torch.backends.mps.is_available()
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "NO_COLOR": "1"}


def _doctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the real doctor, from a folder without a [tool.torchport] section."""
    return subprocess.run(
        [sys.executable, "-m", "torchport", "doctor", *args],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd,
        timeout=300,
        check=False,
    )


def _use_fake_probe(monkeypatch: pytest.MonkeyPatch, probe: dict[str, Any]) -> None:
    """Make the doctor's subprocess print ``probe`` as the real probe would."""
    lines = "".join(json.dumps({k: v}) + "\n" for k, v in probe.items() if k != "probe")
    command = [sys.executable, "-c", f"import sys; sys.stdout.write({lines!r})"]
    monkeypatch.setattr(probes, "probe_command", lambda smoke: command)


# A CUDA build on a machine without a GPU has something to say (no driver for its CUDA).
@pytest.mark.skipif(
    not NO_ACCELERATOR or torch.version.cuda is not None,
    reason="asserts the report of a CPU-only torch on a machine without a GPU",
)
def test_real_doctor_on_this_machine_is_calm_and_exits_0(tmp_path: Path) -> None:
    done = _doctor(cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == CPU_VERDICT
    assert f"torch: {torch.__version__}" in lines
    assert "No findings." in lines
    assert done.stderr == ""


def test_real_doctor_json_is_valid_and_carries_facts_findings_and_verdict(tmp_path: Path) -> None:
    done = _doctor("--json", "--no-smoke", cwd=tmp_path)
    report = json.loads(done.stdout)
    assert report["command"] == "doctor"
    # The build's own version string (2.11.0+cu130), not the distribution's (2.11.0).
    assert report["facts"]["torch"] == str(torch.__version__)
    assert report["facts"]["raw_probe"]["probe"]["status"] == "ok"
    assert report["summary"]["total"] == len(report["findings"])
    if NO_ACCELERATOR:
        assert (done.returncode, report["verdict"]) == (0, CPU_VERDICT)
        assert report["facts"]["accelerator"] == "cpu"


@pytest.mark.skipif(not NO_ACCELERATOR, reason="needs a machine without a GPU")
def test_require_cuda_without_a_gpu_exits_1_with_one_stderr_line(tmp_path: Path) -> None:
    done = _doctor("--require", "cuda", "--no-smoke", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["torchport doctor: --require cuda: no usable device"]
    assert done.stdout.splitlines()[-1] == CPU_VERDICT


@pytest.mark.parametrize(
    "args",
    [["--timeout", "soon"], ["--timeout", "-1"], ["--require", "gpu"], ["--output-format", "xml"]],
)
def test_bad_arguments_exit_2_with_one_stderr_line(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("torchport: error:")


def test_broken_config_exits_2_naming_file_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchport]\nignore = "TP5"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["doctor"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "pyproject.toml" in err[0] and "ignore" in err[0]


def test_hung_probe_is_a_finding_and_the_report_still_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    script = 'import json, time; print(json.dumps({"_started": {"stage": "torch"}}), flush=True)'
    command = [sys.executable, "-c", f"{script}; time.sleep(60)"]
    monkeypatch.setattr(probes, "probe_command", lambda smoke: command)
    assert main(["doctor", "--timeout", "1", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in report["findings"]] == ["TP530"]
    assert report["verdict"] == (
        "GPU not usable: The environment probe did not finish within 1.0 s: "
        "it hung in `import torch`"
    )


def test_gpu_machine_report_shows_facts_findings_and_verdict_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _use_fake_probe(monkeypatch, gpu_machine())
    assert main(["doctor", "--require", "cuda"]) == 0  # the TF32 note is info only
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "torch build: CUDA 12.6" in lines and "driver: 560.35.03" in lines
    gpu_row = next(line for line in lines if "NVIDIA H100 80GB HBM3" in line)
    assert "9.0" in gpu_row and "79.2 GiB" in gpu_row
    assert "  h2d pinned gb per s: 25" in lines
    assert out.index("torch build") < out.index("TP529 info tf32-not-enabled")
    assert "help: Call `torch.set_float32_matmul_precision" in out
    assert lines[-1] == "GPU usable: NVIDIA H100 80GB HBM3 (cuda:0)"


def test_config_ignore_drops_a_doctor_finding_and_its_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    probe = gpu_machine()
    probe["packages"]["dists"]["torch"].append({"version": "2.1.0", "location": "/old"})
    _use_fake_probe(monkeypatch, probe)
    monkeypatch.chdir(tmp_path)
    assert main(["doctor", "--json"]) == 1
    assert "TP520" in {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    (tmp_path / "pyproject.toml").write_text('[tool.torchport]\nignore = ["TP520"]\n')
    assert main(["doctor", "--json"]) == 0
    assert "TP520" not in {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
