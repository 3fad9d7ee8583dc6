"""Generators under --simulate cuda: a device generator works, a CPU one drawing for the device
fails as on a GPU and is reported (TP118) at the user's line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from torchport.findings import Finding
from torchport.runtime import watch


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


def _generator_findings(w: watch) -> list[Finding]:
    return [f for f in w.findings if f.code == "TP118"]


def test_a_device_generator_is_made_seeded_and_drawn_from() -> None:
    with watch("cuda") as w:
        first = torch.Generator(device="cuda").manual_seed(7)
        second = torch.Generator(device="cuda").manual_seed(7)
        a = torch.randn(4, generator=first, device="cuda")
        b = torch.empty(4, device="cuda").uniform_(0, 1, generator=second)
        again = torch.randn(
            4, generator=torch.Generator(device="cuda").manual_seed(7), device="cuda"
        )
        kinds = (
            isinstance(first, torch.Generator),
            isinstance(torch.default_generator, torch.Generator),
        )
        device = first.device
    assert device == torch.device("cuda", 0)
    assert kinds == (True, True)
    assert a.device.type == b.device.type == "cuda"
    assert torch.equal(a.cpu(), again.cpu())
    assert _generator_findings(w) == []


def test_a_cpu_generator_for_a_device_factory_fails_as_on_a_gpu() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError, match="device type for generator"):
        host = torch.Generator().manual_seed(0)
        torch.randn(4, generator=host, device="cuda")  # factory here
    [found] = _generator_findings(w)
    assert found.location is not None and found.location.line == _line("# factory here")
    assert found.fix is not None and "torch.Generator(device=device)" in found.fix.title


def test_a_cpu_generator_for_an_in_place_draw_on_a_device_tensor_fails() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError, match="device type for generator"):
        scale = torch.empty(4, 1, device="cuda")
        scale.uniform_(0.9, 1.1, generator=torch.Generator())  # in place here
    [found] = _generator_findings(w)
    assert found.location is not None and found.location.line == _line("# in place here")


def test_a_device_generator_drawing_a_host_tensor_fails_as_on_a_gpu() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError, match="'cpu' device type for generator"):
        on_device = torch.Generator(device="cuda").manual_seed(0)
        torch.rand(4, generator=on_device)  # drawn on the host here
    [found] = _generator_findings(w)
    assert found.location is not None and found.location.line == _line("# drawn on the host here")
    assert "draws on the host with a generator of the device" in found.message


def test_a_device_generator_filling_a_host_tensor_in_place_fails() -> None:
    with watch("cuda"), pytest.raises(RuntimeError, match="'cpu' device type for generator"):
        torch.empty(4).uniform_(generator=torch.Generator(device="cuda"))


def test_a_cpu_generator_shuffling_a_loader_is_fine() -> None:
    data = TensorDataset(torch.arange(8.0))
    with watch("cuda") as w:
        loader = DataLoader(data, batch_size=4, shuffle=True, generator=torch.Generator())
        seen = sorted(int(v) for (batch,) in loader for v in batch.to("cuda").cpu())
    assert seen == list(range(8))
    assert _generator_findings(w) == []


def test_a_shuffling_loader_under_a_device_default_names_where_the_default_was_set() -> None:
    # RandomSampler draws its permutation with a CPU generator: on the default device, CUDA
    # refuses it, and the line to change is the set_default_device call, not the loop
    with watch("cuda") as w, pytest.raises(RuntimeError, match="device type for generator"):
        torch.set_default_device("cuda")  # default set here
        try:
            for _ in DataLoader(TensorDataset(torch.arange(8.0)), batch_size=4, shuffle=True):
                pass
        finally:
            torch.set_default_device(None)
    [found] = _generator_findings(w)
    assert [r.line for r in found.related] == [_line("# default set here")]
