"""The simulated tensor's dispatch: same results, same wrappers, same errors as the full check."""

from __future__ import annotations

import pytest
import torch

from torchport.runtime import watch
from torchport.runtime.simtensor import SimTensor


def test_in_place_and_out_ops_return_the_wrapper_they_were_given() -> None:
    with watch("cuda"):
        a = torch.ones(3, device="cuda")
        b = torch.full((3,), 2.0, device="cuda")
        out = torch.empty(3, device="cuda")
        assert a.add_(b, alpha=3) is a
        assert a.mul_(2) is a
        assert torch.mul(a, b, out=out) is out
        assert isinstance(a, SimTensor) and a.device == torch.device("cuda:0")
        assert a.cpu().tolist() == [14.0, 14.0, 14.0]
        assert out.cpu().tolist() == [28.0, 28.0, 28.0]


def test_ops_on_one_simulated_device_match_the_cpu_bit_for_bit() -> None:
    torch.manual_seed(0)
    x, w = torch.randn(5, 4), torch.randn(3, 4)

    def compute(x: torch.Tensor, w: torch.Tensor) -> list[torch.Tensor]:
        y = torch.addmm(w.sum(1), x, w.t().t().t(), alpha=0.5)
        values, indices = y.max(dim=1)
        return [y.view(-1), values, indices, *y.split(2), y.relu().pow(2).mean()]

    expected = compute(x, w)
    with watch("cuda"):
        got = compute(x.cuda(), w.cuda())
        devices = {t.device for t in got}
        host = [t.cpu() for t in got]
    assert devices == {torch.device("cuda:0")}
    assert all(torch.equal(a, b) for a, b in zip(host, expected, strict=True))


def test_tensors_on_two_simulated_gpus_raise_the_real_error() -> None:
    with watch("cuda:2"):
        first = torch.ones(3, device="cuda:0")
        second = torch.ones(3, device="cuda:1")
        with pytest.raises(RuntimeError) as info:
            first + second
    assert str(info.value).startswith(
        "Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cuda:1!"
    )
