"""The probe subprocess: its streamed output, its timeout, crashes, and a real run here."""

from __future__ import annotations

import json
import sys
import textwrap

from torchport.doctor.probes import collect, parse_output, probe_command


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def test_parse_output_keeps_finished_stages_and_names_the_unfinished_one() -> None:
    stdout = "\n".join(
        [
            json.dumps({"_started": {"stage": "env"}}),
            json.dumps({"env": {"CUDA_VISIBLE_DEVICES": "0"}}),
            "some library printed this",
            "[1, 2]",
            json.dumps({"_started": {"stage": "cuda"}}),
        ]
    )
    probe, unfinished = parse_output(stdout)
    assert probe == {"env": {"CUDA_VISIBLE_DEVICES": "0"}}
    assert unfinished == "cuda"


def test_parse_output_of_a_complete_run_has_no_unfinished_stage() -> None:
    stdout = json.dumps({"_started": {"stage": "env"}}) + "\n" + json.dumps({"env": {}})
    assert parse_output(stdout) == ({"env": {}}, None)


def test_hung_probe_is_killed_at_the_timeout_and_keeps_earlier_stages() -> None:
    command = _python(
        """
        import json, subprocess, sys, time
        print(json.dumps({"env": {"CUDA_VISIBLE_DEVICES": None}}), flush=True)
        print(json.dumps({"_started": {"stage": "cuda"}}), flush=True)
        # A child holding the pipes open, as a hung nvidia-smi would.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        time.sleep(60)
        """
    )
    probe = collect(timeout=1.0, command=command)
    assert probe["probe"]["status"] == "timeout"
    assert probe["probe"]["unfinished_stage"] == "cuda"
    assert probe["env"] == {"CUDA_VISIBLE_DEVICES": None}


def test_crashing_probe_is_reported_with_its_exit_code_and_stderr() -> None:
    command = _python(
        """
        import json, sys
        print(json.dumps({"_started": {"stage": "torch"}}), flush=True)
        sys.stderr.write("Segmentation fault\\n")
        sys.exit(139)
        """
    )
    probe = collect(timeout=30.0, command=command)
    assert probe["probe"]["status"] == "crashed"
    assert probe["probe"]["returncode"] == 139
    assert probe["probe"]["unfinished_stage"] == "torch"
    assert "Segmentation fault" in probe["probe"]["stderr_tail"]


def test_probe_that_cannot_start_is_reported_as_failed() -> None:
    probe = collect(timeout=5.0, command=["/nonexistent/python-for-torchport-tests"])
    assert probe["probe"]["status"] == "failed"
    assert probe["probe"]["error"]


def test_probe_command_asks_for_the_smoke_test_only_when_wanted() -> None:
    assert probe_command(smoke=True)[-1] == "--smoke"
    assert "--smoke" not in probe_command(smoke=False)
    assert probe_command(smoke=False)[0] == sys.executable


def test_real_probe_on_this_machine_reports_torch_and_the_cuda_init_error() -> None:
    probe = collect(timeout=120.0, smoke=False)
    assert probe["probe"]["status"] == "ok"
    import torch

    # torch.__version__, with the build's local tag: a CUDA wheel from PyPI says 2.11.0+cu130
    # there while its distribution metadata says 2.11.0.
    assert probe["torch"]["version"] == str(torch.__version__)
    assert set(probe) >= {"python", "env", "host", "packages", "driver", "cuda", "mps", "xpu"}
    assert "smoke" not in probe

    if not torch.cuda.is_available() and torch.version.cuda is None:
        # The real reason comes from torch.cuda.init(), not from is_available().
        assert "not compiled with CUDA" in probe["cuda"]["init_error"]
