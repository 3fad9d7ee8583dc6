"""A value read once a step is a suggestion; one read many times a step is a warning."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from torchport.findings import Severity
from torchport.runtime import watch


def _train(reads_per_step: int) -> None:
    model = nn.Linear(4, 2).to("cuda")
    loader = DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=4)
    for (x,) in loader:
        loss = model(x.to("cuda")).sum()
        loss.backward()
        for _ in range(reads_per_step):
            loss.item()


@pytest.mark.parametrize(("reads", "severity"), [(1, Severity.INFO), (4, Severity.WARNING)])
def test_sync_severity_follows_reads_per_step(reads: int, severity: Severity) -> None:
    with watch("cuda") as w:
        _train(reads)
    [found] = [f for f in w.findings if f.code == "TP204"]
    assert found.severity is severity


@pytest.mark.parametrize(
    ("elements", "severity"), [(1000, Severity.INFO), (65536, Severity.WARNING)]
)
def test_float64_on_the_device_is_a_warning_for_data_and_info_for_a_small_table(
    elements: int, severity: Severity
) -> None:
    # a diffusion schedule of 1000 steps kept in float64 costs nothing; a float64 batch does
    with watch("cuda") as w:
        torch.linspace(1e-4, 0.02, elements, dtype=torch.float64).to("cuda")
    [found] = [f for f in w.findings if f.code == "TP302"]
    assert found.severity is severity


def test_a_read_of_an_async_host_copy_names_where_the_copy_was_made() -> None:
    def to_host(out: torch.Tensor) -> torch.Tensor:
        return out.to("cpu", non_blocking=True)  # copied here

    with watch("cuda") as w:
        host = to_host(torch.randn(3, device="cuda"))
        host.numpy()  # read here
    [found] = [f for f in w.findings if f.code == "TP208"]
    assert found.location is not None and found.location.line == _line("# read here")
    assert [r.line for r in found.related] == [_line("# copied here")]


def test_a_copy_read_by_a_library_on_another_thread_is_reported_at_the_copy(
    tmp_path: Path,
) -> None:
    with watch("cuda") as w:
        weights = torch.randn(3, device="cuda")
        host = weights.to("cpu", non_blocking=True, copy=True)  # copied, never waited for
        writer = threading.Thread(target=torch.save, args=(host, tmp_path / "w.pt"))
        writer.start()
        writer.join()
    [found] = [f for f in w.findings if f.code == "TP208"]
    assert found.location is not None
    assert found.location.line == _line("# copied, never waited for")
    assert "(by library code)" in found.message


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


def _collected(count: int, joined: bool) -> list[int]:
    with watch("cuda") as w:
        tokens = [torch.randint(0, 9, (), device="cuda") for _ in range(count)]
        joined_ids = torch.stack(tokens).cpu() if joined else None
        ids = joined_ids if joined_ids is not None else torch.tensor(tokens)  # read one by one
        assert ids.device.type == "cpu" and ids.shape == (count,)
    return [f.location.line for f in w.findings if f.code == "TP254" and f.location]


def test_torch_tensor_of_many_device_scalars_is_reported_and_a_stack_is_not() -> None:
    assert _collected(16, joined=False) == [_line("# read one by one")]
    assert _collected(16, joined=True) == []
    assert _collected(4, joined=False) == []  # a few copies cost little


def _sample(read_every_step: bool) -> None:
    # a sampling loop: the model is called at every step, with no loader and no backward
    model = nn.Linear(4, 4).to("cuda")
    timesteps = torch.arange(10, device="cuda")
    x = torch.randn(2, 4, device="cuda")
    with torch.no_grad():
        for t in timesteps:
            if read_every_step:
                index = (timesteps == t).nonzero().item()  # read per step
                x = x * (index + 1)
            x = model(x)
    x.sum().item()  # once, after the loop


@pytest.mark.parametrize("read_every_step", [True, False])
def test_a_loop_without_batches_or_backward_counts_its_model_calls_as_steps(
    read_every_step: bool,
) -> None:
    with watch("cuda") as w:
        _sample(read_every_step)
    found = sorted(f.code for f in w.findings if f.code in ("TP204", "TP206"))
    assert found == (["TP204", "TP206"] if read_every_step else [])
    for f in w.findings:
        if f.code == "TP204":
            assert f.location is not None and f.location.line == _line("# read per step")
            assert "the loop that calls the model" in f.message
