"""`check` runs the placement analysis only where something can surely be on an accelerator."""

from __future__ import annotations

import textwrap

import pytest

from torchport.analyze.checks import Analysis

PASSES_A_DEVICE_ALONG = """
import torch

def make(n, device=None, dtype=None):
    return torch.zeros(n, device=device, dtype=dtype) + torch.ones(n)
"""


def _analysis(source: str) -> Analysis:
    return Analysis(textwrap.dedent(source), "t.py")


def test_code_that_only_passes_a_device_argument_along_is_not_followed() -> None:
    a = _analysis(PASSES_A_DEVICE_ALONG)
    assert a.uses_accelerator  # a device the script may choose: the other rules still look
    assert a.placement is None


@pytest.mark.parametrize(
    "placing",
    [
        'DEV = "cuda:0"',
        'DEV = f"cuda:{0}"',
        "DEV = torch.device(name)",
        "DEV = torch.accelerator.current_accelerator()",
        "x = torch.ones(1).cuda()",
        "x = torch.ones(1).to(rank)",
        'x = torch.ones(1).type("torch.cuda.FloatTensor")',
        "from torchport import default_device\nDEV = default_device()",
    ],
)
def test_anything_that_surely_places_on_an_accelerator_is_followed(placing: str) -> None:
    a = _analysis(PASSES_A_DEVICE_ALONG + placing + "\n")
    assert a.placement is not None


def test_a_device_named_only_through_torch_device_still_finds_the_meeting() -> None:
    a = _analysis(
        """
        import torch

        def step(name):
            device = torch.device(name)
            w = torch.ones(3, device=device)
            return w + torch.zeros(3)
        """
    )
    placement = a.placement
    assert placement is not None
    assert [c.meet.node.lineno for c in placement.conflicts] == [7]
