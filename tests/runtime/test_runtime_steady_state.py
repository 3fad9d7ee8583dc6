"""Steady state (runtime/steady.py): after a model's first calls, most steps run unobserved.

What must hold: the report says what was sampled; copies and syncs are counted exactly while
the mode is off; something new (a model call from another line, a new copy site, an error)
brings full observation back; and nothing of torchport is left behind after the watch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

import torchport
from torchport.cli import main
from torchport.runtime.steady import SAMPLE_EVERY, WARM_CALLS

STEPS = 200


def _train(model: nn.Module, steps: int, *, copy_to: str | None = None) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    for _ in range(steps):
        xb = x.to(copy_to) if copy_to is not None else x
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        del xb


def _mode() -> object:
    return torch.overrides._get_current_function_mode()  # type: ignore[no-untyped-call]


def test_a_long_loop_runs_most_model_calls_unobserved_and_the_report_says_so() -> None:
    with torchport.watch() as w:
        _train(nn.Linear(4, 2), STEPS)
    record = w.record
    assert record.model_calls == STEPS
    unobserved = record.model_calls_unobserved
    expected = (STEPS - WARM_CALLS) * (1 - 1 / SAMPLE_EVERY)
    assert 0.8 * expected < unobserved < STEPS - WARM_CALLS
    steady = w.report().facts["steady_state"]
    assert steady == {
        "model_calls": STEPS,
        "observed_fully": STEPS - unobserved,
        "sampled": ["ops_in_forward_by_device"],
    }


def test_a_short_loop_is_observed_fully_and_its_report_has_no_sampling_fact() -> None:
    with torchport.watch() as w:
        _train(nn.Linear(4, 2), WARM_CALLS)
    assert w.record.model_calls_unobserved == 0
    assert "steady_state" not in w.report().facts


def test_every_step_observes_every_call() -> None:
    with torchport.watch(every_step=True) as w:
        _train(nn.Linear(4, 2), STEPS)
    assert w.record.model_calls_unobserved == 0


def test_run_every_step_reports_no_sampling(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(
        "import torch\n"
        "model = torch.nn.Linear(4, 2)\n"
        f"for _ in range({STEPS}):\n"
        "    model(torch.randn(8, 4)).sum().backward()\n"
    )
    facts = {}
    for options in ([], ["--every-step"]):
        report = tmp_path / f"report{len(options)}.json"
        code = main(["run", *options, "--report", str(report), "--output-format", "json",
                     str(script)])  # fmt: skip
        assert code == 0
        facts[len(options)] = json.loads(report.read_text())["facts"]
    assert facts[0]["steady_state"]["model_calls"] == STEPS
    assert "steady_state" not in facts[1]


def test_copies_are_counted_exactly_while_the_mode_is_off() -> None:
    with torchport.watch() as w:
        _train(nn.Linear(4, 2), STEPS, copy_to="meta")
    assert w.record.model_calls_unobserved > 0
    (stats,) = w.record.transfers.values()
    assert stats.count == STEPS


def test_a_model_call_from_a_new_line_after_the_warm_up_is_observed() -> None:
    model = nn.Linear(4, 2)
    with torchport.watch() as w:
        _train(model, STEPS)
        paused_after_training = _mode() is None
        model.eval()
        with torch.no_grad():
            out = model(torch.randn(3, 4))
            observed_in_evaluation = _mode() is not None
            wide = out + torch.ones(3, 2, dtype=torch.float64)
    assert paused_after_training and observed_in_evaluation
    assert wide.dtype == torch.float64
    assert [f.code for f in w.findings] == ["TP350"]  # the float64 promotion


def test_a_new_copy_site_while_paused_brings_the_mode_back() -> None:
    model = nn.Linear(4, 2)
    with torchport.watch():
        _train(model, STEPS)
        assert _mode() is None
        torch.zeros(2).to("meta")
        assert _mode() is not None


def test_an_error_in_a_model_call_while_paused_brings_the_mode_back() -> None:
    model = nn.Linear(4, 2)
    with torchport.watch():
        _train(model, STEPS)
        assert _mode() is None
        with pytest.raises(RuntimeError):
            model(torch.randn(3, 5))
        assert _mode() is not None


def test_a_watch_that_ends_paused_leaves_no_mode_and_no_patched_method() -> None:
    before = dict(vars(torch.Tensor)), torch.tensor, torch.nonzero
    with torchport.watch():
        _train(nn.Linear(4, 2), STEPS)
        assert _mode() is None and torch.Tensor.item is not torch._C.TensorBase.item
    assert torch._C._len_torch_function_stack() == 0
    assert (dict(vars(torch.Tensor)), torch.tensor, torch.nonzero) == before
    assert torch.Tensor.item is torch._C.TensorBase.item


@pytest.mark.cuda
def test_syncs_in_a_long_cuda_loop_are_counted_exactly_and_reported_in_the_loop() -> None:
    model = nn.Linear(4, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 4, device="cuda"), torch.randn(8, 2, device="cuda")
    with torchport.watch() as w:
        for _ in range(STEPS):
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss.item()
    assert w.record.model_calls_unobserved > 0
    ((_, kind), stats), *_ = w.record.syncs.items()
    assert (kind, stats.count) == (".item()", STEPS)
    assert "TP204" in [f.code for f in w.findings]
