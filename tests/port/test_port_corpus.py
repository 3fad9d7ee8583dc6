"""The corpus: CPU programs in the shapes of public code, and device-aware ones.

Each CPU program ports into code that compiles and computes the same (on a CUDA machine: on
the GPU, within a stated tolerance), runs under a simulated GPU with every forward op on the
device, passes ``torchport check``, ports idempotently and keeps its comments; four run under
torchrun. Each device-aware program is left as it was (unless it uses a deprecated API that
the port may modernise) and behaves exactly as before.
Cases that today's port still fails are strict xfails, listed in port_support.PORT_NOT_YET.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from port_support import (
    AWARE,
    BF16_LSTM,
    BF16_NOT_APPLIED,
    CORPUS,
    DISTRIBUTED,
    HOST_OPS_IN_FORWARD,
    MODERNISED,
    PORT_NOT_YET,
    PROGRAMS,
    TORCHPORT,
    cases,
    child_env,
    errors_in,
    final_loss,
    has_subcommand,
    program_files,
)
from tolerances import (
    ON_GPU,
    SAME_KERNELS,
    Tolerance,
    bf16_tolerance,
    result_tolerance,
    simulated_tolerance,
)

from torchport.port import PortOptions
from torchport.port.files import port_paths

Runs = dict[str, dict[str, dict[str, str | None]]]
ALL = PROGRAMS + AWARE
CHECKS = {"rewritten", "cpu", "bf16", "simulated", "forward", "check", "again", "aware"}
CHECKS |= {"untouched", "comments"}


def assert_close(result: float, expected: float, tolerance: Tolerance) -> None:
    assert result == pytest.approx(expected, rel=tolerance.rel, abs=tolerance.abs), (
        f"{result} against {expected} ({tolerance.reason})"
    )


def ran(run: dict[str, str | None]) -> float:
    assert run["error"] is None, f"{run['error']} at {run['where']}"
    return final_loss(run["last"])


def sources(root: Path, program: str) -> dict[str, str]:
    return {str(f.relative_to(root)): f.read_text() for f in program_files(root, program)}


@pytest.mark.parametrize("program", cases(PROGRAMS, "rewritten"))
def test_corpus_program_is_rewritten_into_code_that_compiles(
    ported_corpus: Path, program: str
) -> None:
    before, after = sources(CORPUS, program), sources(ported_corpus, program)
    assert after != before
    for name, text in after.items():
        compile(text, name, "exec")


@pytest.mark.parametrize("program", cases(PROGRAMS, "cpu"))
def test_ported_program_prints_the_result_of_the_cpu_original(
    corpus_runs: Runs, program: str
) -> None:
    # On a CUDA machine the ported program runs on the GPU: the tolerance says how close.
    original = ran(corpus_runs["original"][program])
    ported = ran(corpus_runs["ported"][program])
    assert_close(ported, original, result_tolerance(program, on_gpu=ON_GPU))


@pytest.mark.parametrize("program", cases(PROGRAMS, "bf16"))
def test_bf16_autocast_port_runs_and_stays_close_to_the_float32_loss(
    corpus_runs: Runs, bf16_corpus: Path, program: str
) -> None:
    if program in BF16_LSTM and not ON_GPU and not _cpu_runs_bf16_lstm():
        pytest.skip("this CPU has no bfloat16 LSTM (oneDNN needs AVX-512)")
    run = ran(corpus_runs["bf16"][program])
    ported = "\n".join(sources(bf16_corpus, program).values())
    added = "torch.autocast(device_type=device.type, dtype=torch.bfloat16)" in ported
    # A program that already uses autocast (the AMP ones) is left as it is.
    had = "autocast(" in "\n".join(sources(CORPUS, program).values())
    assert added is not (had or program in BF16_NOT_APPLIED)
    assert_close(run, ran(corpus_runs["original"][program]), bf16_tolerance(program))


def _cpu_runs_bf16_lstm() -> bool:
    import torch

    lstm = torch.nn.LSTM(4, 4)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lstm(torch.randn(3, 2, 4))
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize("program", cases(ALL, "simulated"))
def test_ported_program_runs_under_simulated_cuda_with_the_original_result(
    corpus_runs: Runs, simulated_reports: dict[str, dict[str, Any]], program: str
) -> None:
    simulated = ran(corpus_runs["simulated"][program])
    assert_close(simulated, ran(corpus_runs["original"][program]), simulated_tolerance(program))
    findings = simulated_reports[program]["findings"]
    device = [f for f in findings if f["code"].startswith("TP1") or f["severity"] == "error"]
    assert device == []


@pytest.mark.parametrize("program", cases(ALL, "forward"))
def test_every_forward_op_of_the_ported_program_runs_on_the_device(
    corpus_runs: Runs, simulated_reports: dict[str, dict[str, Any]], program: str
) -> None:
    ran(corpus_runs["simulated"][program])
    # Ops run while a module's forward is on the stack, by the device of their first tensor.
    ops = simulated_reports[program]["facts"].get("ops_in_forward_by_device", {})
    host_share = HOST_OPS_IN_FORWARD.get(program, 0.0)
    assert ops.get("cuda", 0) > 0, ops
    assert ops.get("cpu", 0) <= host_share * sum(ops.values()), ops


def _checked(root: Path) -> list[dict[str, Any]]:
    if not has_subcommand("check"):
        pytest.skip("`torchport check` is not available in this checkout")
    done = subprocess.run(
        [str(TORCHPORT), "check", "--output-format", "json", "--exit-zero", "."],
        capture_output=True, text=True, env=child_env(), timeout=300, check=False, cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    findings: list[dict[str, Any]] = json.loads(done.stdout)["findings"]
    return findings


@pytest.fixture(scope="session")
def check_findings(ported_corpus: Path) -> list[dict[str, Any]]:
    return _checked(ported_corpus)


@pytest.fixture(scope="session")
def bf16_check_findings(bf16_corpus: Path) -> list[dict[str, Any]]:
    return _checked(bf16_corpus)


def test_check_still_gives_advice_on_the_ported_corpus(
    check_findings: list[dict[str, Any]],
) -> None:
    assert any(f["severity"] in ("info", "warning") for f in check_findings)


@pytest.mark.parametrize("program", cases(ALL, "check"))
def test_check_finds_no_error_in_the_ported_program(
    check_findings: list[dict[str, Any]], ported_corpus: Path, program: str
) -> None:
    assert errors_in(check_findings, ported_corpus, program) == []


@pytest.mark.parametrize("program", cases(PROGRAMS, "bf16-check"))
def test_check_finds_no_error_in_the_bf16_port(
    bf16_check_findings: list[dict[str, Any]], bf16_corpus: Path, program: str
) -> None:
    # what fails only under CUDA's autocast (binary cross-entropy) a CPU run cannot show
    assert errors_in(bf16_check_findings, bf16_corpus, program) == []


@pytest.fixture(scope="session")
def changed_by_porting_again(ported_corpus: Path) -> set[str]:
    return {str(r.path) for r in port_paths([str(ported_corpus)], PortOptions()) if r.changed}


@pytest.mark.parametrize("program", cases(ALL, "again"))
def test_porting_the_ported_program_changes_nothing(
    changed_by_porting_again: set[str], ported_corpus: Path, program: str
) -> None:
    files = {str(f) for f in program_files(ported_corpus, program)}
    assert sorted(files & changed_by_porting_again) == []


def test_porting_the_distributed_port_changes_nothing(distributed_corpus: Path) -> None:
    again = port_paths([str(distributed_corpus)], PortOptions(distributed=True))
    assert [r.path for r in again if r.changed] == []


@pytest.mark.parametrize("program", cases(AWARE, "aware"))
def test_device_aware_port_prints_the_result_of_the_original_on_both_paths(
    corpus_runs: Runs, program: str
) -> None:
    # As run here: on the GPU where there is one, so only the GPU's own nondeterminism
    # (atomics, cuDNN's choice of algorithm) may tell the two apart; else on the CPU.
    tolerance = result_tolerance(program, on_gpu=True) if ON_GPU else SAME_KERNELS
    ported = ran(corpus_runs["ported"][program])
    assert_close(ported, ran(corpus_runs["original"][program]), tolerance)
    # And down the program's GPU path, both under --simulate cuda: the same CPU kernels.
    simulated = ran(corpus_runs["simulated"][program])
    assert_close(simulated, ran(corpus_runs["simulated original"][program]), SAME_KERNELS)


@pytest.mark.parametrize("program", cases([p for p in AWARE if p not in MODERNISED], "untouched"))
def test_device_aware_program_is_left_byte_for_byte_as_it_was(
    ported_corpus: Path, program: str
) -> None:
    assert sources(ported_corpus, program) == sources(CORPUS, program)


def comments(text: str) -> list[tuple[str, str]]:
    """Each comment with the code before it on its line, without whitespace."""
    lines = text.splitlines()
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [
        ("".join(lines[t.start[0] - 1][: t.start[1]].split()), t.string)
        for t in tokens
        if t.type == tokenize.COMMENT
    ]


def kept_on_its_line(code: str, ported_code: str) -> bool:
    """The ported line still holds the original code, edits inserted (`.to(device)`...)."""
    rest = iter(ported_code)
    return all(char in rest for char in code)


@pytest.mark.parametrize("program", cases(ALL, "comments"))
def test_port_keeps_every_comment_on_its_own_line_and_in_order(
    ported_corpus: Path, program: str
) -> None:
    for name, text in sources(CORPUS, program).items():
        original, ported = comments(text), comments((ported_corpus / name).read_text())
        rest = iter(ported)
        missing = [
            (code, comment)
            for code, comment in original
            if not any(c == comment and kept_on_its_line(code, p) for p, c in rest)
        ]
        assert missing == [], name
        before, after = Counter(c for _, c in original), Counter(c for _, c in ported)
        copied = [c for c in before if after[c] > before[c]]
        assert copied == [], name


@pytest.mark.parametrize("program", DISTRIBUTED)
def test_distributed_port_under_torchrun_matches_one_process_with_the_same_global_batch(
    torchrun_losses: dict[str, tuple[int, str, str]], corpus_runs: Runs, program: str
) -> None:
    code, out, err = torchrun_losses[program]
    assert code == 0, err[-3000:]
    finals = [line for line in out.splitlines() if line.startswith("final loss")]
    assert len(finals) == 1, f"rank 0 alone should print the final loss: {out!r}"
    single = final_loss(corpus_runs["original"][program]["last"])
    assert final_loss(finals[0]) == pytest.approx(single, rel=1e-5, abs=1e-6)


def test_not_yet_list_names_corpus_programs_and_known_checks() -> None:
    for program, (checks, reason) in PORT_NOT_YET.items():
        assert program in ALL and reason, program
        assert set(checks.split()) <= CHECKS, program


def test_every_corpus_file_belongs_to_a_listed_program() -> None:
    listed = {f for p in ALL for f in program_files(CORPUS, p)}
    on_disk = {f for f in CORPUS.rglob("*.py") if "__pycache__" not in f.parts}
    assert sorted(on_disk - listed) == []


def run_runner(root: Path, *entries: str) -> dict[str, dict[str, str | None]]:
    runner = Path(__file__).with_name("corpus_runner.py")
    done = subprocess.run(
        [sys.executable, str(runner), str(root), *entries],
        capture_output=True, text=True, env=child_env(), timeout=120, check=True, cwd=root,
    )  # fmt: skip
    results: dict[str, dict[str, str | None]] = json.loads(done.stdout)
    return results


def test_runner_reports_a_failing_program_with_the_line_it_failed_at(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import sys\n\nraise ValueError(sys.argv[0][-9:])\n")
    result = run_runner(tmp_path, "broken.py")["broken.py"]
    assert result["error"] == "ValueError: broken.py"
    assert result["where"] == "broken.py:3" and result["internal"] is None


def test_runner_runs_package_entries_afresh_each_time(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("COUNT = []\n")
    for name in ("first", "second"):
        (tmp_path / "pkg" / f"{name}.py").write_text(
            "from pkg import COUNT\nCOUNT.append(1)\nprint(f'final loss {len(COUNT):.8f}')\n"
        )
    results = run_runner(tmp_path, "-m:pkg.first", "-m:pkg.second")
    assert [r["last"] for r in results.values()] == ["final loss 1.00000000"] * 2
