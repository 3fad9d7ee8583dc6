"""The corpus of CPU programs: each ports, compiles, computes the same, ports idempotently,
runs under a simulated GPU, passes ``torchport check``, and (four of them) runs under torchrun.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from port_support import (
    CORPUS,
    DISTRIBUTED,
    PROGRAMS,
    TORCHPORT,
    child_env,
    final_loss,
    has_subcommand,
    simulate_report_path,
    source_file,
)

from torchport.port import PortOptions
from torchport.port.files import port_paths


@pytest.mark.parametrize("program", PROGRAMS)
def test_corpus_program_is_rewritten_into_code_that_compiles(
    ported_corpus: Path, program: str
) -> None:
    before = source_file(CORPUS, program).read_text()
    after = source_file(ported_corpus, program).read_text()
    assert after != before
    compile(after, program, "exec")


@pytest.mark.parametrize("program", PROGRAMS)
def test_ported_program_prints_the_same_final_loss_on_the_cpu(
    corpus_runs: dict[str, dict[str, dict[str, str | None]]], program: str
) -> None:
    original, ported = corpus_runs["original"][program], corpus_runs["ported"][program]
    assert original["error"] is None, original["error"]
    assert ported["error"] is None, ported["error"]
    assert final_loss(ported["last"]) == pytest.approx(final_loss(original["last"]), abs=1e-6)


@pytest.mark.parametrize("program", PROGRAMS)
def test_bf16_autocast_port_runs_and_stays_close_to_the_float32_loss(
    corpus_runs: dict[str, dict[str, dict[str, str | None]]], bf16_corpus: Path, program: str
) -> None:
    run = corpus_runs["bf16"][program]
    assert run["error"] is None, run["error"]
    ported = source_file(bf16_corpus, program).read_text()
    # A program that already uses autocast (the legacy AMP one) is left as it is.
    assert "torch.autocast(device_type=device.type, dtype=torch.bfloat16)" in ported or (
        "autocast(" in source_file(CORPUS, program).read_text()
    )
    original = final_loss(corpus_runs["original"][program]["last"])
    assert final_loss(run["last"]) == pytest.approx(original, rel=2e-2)


def test_porting_the_ported_corpus_changes_nothing(
    ported_corpus: Path, distributed_corpus: Path
) -> None:
    again = port_paths([str(ported_corpus)], PortOptions())
    assert [r.path for r in again if r.changed] == []
    again = port_paths([str(distributed_corpus)], PortOptions(distributed=True))
    assert [r.path for r in again if r.changed] == []


@pytest.mark.parametrize("program", PROGRAMS)
def test_ported_program_runs_to_the_end_under_simulated_cuda_without_device_findings(
    corpus_runs: dict[str, dict[str, dict[str, str | None]]], ported_corpus: Path, program: str
) -> None:
    if "simulated" not in corpus_runs:
        pytest.skip("`torchport run` is not available in this checkout")
    run = corpus_runs["simulated"][program]
    assert run["error"] is None, run["error"]
    final_loss(run["last"])
    report = json.loads(simulate_report_path(ported_corpus).read_text())
    path = str(source_file(ported_corpus, program))
    device_findings = [
        f for f in report["findings"]
        if f["path"] == path and (f["code"].startswith("TP1") or f["severity"] == "error")
    ]  # fmt: skip
    assert device_findings == []


def test_check_finds_nothing_above_warning_in_the_ported_corpus(ported_corpus: Path) -> None:
    if not has_subcommand("check"):
        pytest.skip("`torchport check` is not available in this checkout")
    done = subprocess.run(
        [str(TORCHPORT), "check", "--output-format", "json", "--exit-zero", str(ported_corpus)],
        capture_output=True, text=True, env=child_env(), timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["findings"], "check should still have advice (info/warning) for the corpus"
    above = [f for f in report["findings"] if f["severity"] == "error"]
    assert above == []


@pytest.mark.parametrize("program", DISTRIBUTED)
def test_distributed_port_under_torchrun_matches_one_process_with_the_same_global_batch(
    torchrun_losses: dict[str, tuple[int, str, str]],
    corpus_runs: dict[str, dict[str, dict[str, str | None]]],
    program: str,
) -> None:
    code, out, err = torchrun_losses[program]
    assert code == 0, err[-3000:]
    finals = [line for line in out.splitlines() if line.startswith("final loss")]
    assert len(finals) == 1, f"rank 0 alone should print the final loss: {out!r}"
    single = final_loss(corpus_runs["original"][program]["last"])
    assert final_loss(finals[0]) == pytest.approx(single, rel=1e-5, abs=1e-6)


def test_runner_reports_a_failing_program(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("raise ValueError('boom')\n")
    runner = Path(__file__).with_name("corpus_runner.py")
    done = subprocess.run(
        [sys.executable, str(runner), str(tmp_path), "broken.py"],
        capture_output=True, text=True, env=child_env(), timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout)["broken.py"]["error"] == "ValueError: boom"
