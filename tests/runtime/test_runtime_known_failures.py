"""A failure whose cause is a known porting mistake also becomes a finding at the user's line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from torchport.runtime import watch


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


def test_data_parallel_over_a_module_left_on_the_cpu_is_reported_as_tp411() -> None:
    # with one GPU, DataParallel moves the module itself; with two it refuses a CPU module
    refused = pytest.raises(RuntimeError, match="module must have its parameters")
    with refused, watch("cuda:2") as w:
        model = nn.DataParallel(nn.Linear(3, 2))
        model(torch.randn(4, 3, device="cuda"))  # fails here
    [found] = [f for f in w.findings if f.code == "TP411"]
    assert found.location is not None and found.location.line == _line("# fails here")
    assert found.fix is not None and "before wrapping" in found.fix.title


def test_an_unrelated_failure_is_no_finding() -> None:
    with pytest.raises(ValueError, match="boom"), watch("cuda") as w:
        raise ValueError("boom")
    assert w.findings == []
