"""Findings that are suggestions (info) where the code works on a GPU as written.

TP112 is a warning where a legacy CPU constructor's tensor is used where it is made, and info
where the tensor follows its module or the device at once (a buffer, a parameter, an immediate
``.to(device)``). TP302 is info for a 0-dim float64 running sum, which costs nothing."""

from __future__ import annotations

import textwrap

import pytest

from torchport.analyze.engine import analyze
from torchport.findings import Severity

MODULE = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, idxs, n, device):
        super().__init__()
        {line}
"""


@pytest.mark.parametrize(
    ("line", "severity"),
    [
        ('self.register_buffer("idx", torch.LongTensor(idxs).view(n, n))', Severity.INFO),
        ("self.scale = nn.Parameter(torch.FloatTensor(idxs))", Severity.INFO),
        ("self.idx = torch.LongTensor(idxs).to(device)", Severity.INFO),
        ("self.idx = torch.LongTensor(idxs)", Severity.WARNING),
        ("self.idx = torch.Tensor(n)", Severity.WARNING),  # uninitialised: always worth a look
    ],
)
def test_tp112_is_a_suggestion_only_where_the_tensor_follows_the_device(
    line: str, severity: Severity
) -> None:
    source = textwrap.dedent(MODULE).format(line=line)
    [found] = [f for f in analyze(source, "t.py", lambda c: True) if f.code == "TP112"]
    assert found.severity is severity


def test_tp302_is_a_suggestion_for_a_zero_dim_float64_running_sum() -> None:
    source = textwrap.dedent(
        """\
        import torch

        device = torch.device("cuda")
        total = torch.zeros((), device=device, dtype=torch.float64)
        table = torch.zeros(1000, device=device, dtype=torch.float64)
        """
    )
    found = [f for f in analyze(source, "t.py", lambda c: True) if f.code == "TP302"]
    assert [(f.location.line, f.severity) for f in found if f.location is not None] == [
        (4, Severity.INFO),
        (5, Severity.WARNING),
    ]
