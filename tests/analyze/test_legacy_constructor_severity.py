"""TP112 is a warning where a legacy CPU constructor's tensor is used where it is made, and a
suggestion (info) where the tensor follows its module or the device at once: a buffer, a
parameter, or an immediate ``.to(device)``, which work on a GPU as written."""

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
