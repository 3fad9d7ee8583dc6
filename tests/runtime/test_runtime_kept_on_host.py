"""A `.to(device)` that left a host tensor on the host, because the device it was given was
read from a module not yet moved, is named when that tensor meets the device later (TP150)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from torchport.runtime import watch


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


def test_an_average_restored_before_the_model_moved_names_the_to_that_kept_it() -> None:
    with pytest.raises(RuntimeError, match="same device"), watch("cuda") as w:
        model = nn.Linear(3, 2)
        saved = {n: p.detach().clone() for n, p in model.named_parameters()}
        device = next(model.parameters()).device  # the host: the model has not moved yet
        shadow = {n: t.to(device) for n, t in saved.items()}  # kept on the host
        model.to("cuda")
        for n, p in model.named_parameters():
            shadow[n].lerp_(p.detach(), 0.1)
    [found] = [f for f in w.findings if f.code == "TP150"]
    assert _line("# kept on the host") in [r.line for r in found.related]
    assert "left on the host by .to()" in found.message


def test_a_to_that_names_no_device_or_casts_is_not_named() -> None:
    with pytest.raises(RuntimeError, match="same device"), watch("cuda") as w:
        table = torch.arange(4.0)
        same = table.to(torch.float32)  # a dtype it already has: no device asked for
        halves = table.to("cpu", dtype=torch.float16)  # a cast: a new tensor
        total = same + torch.ones(4, device="cuda") + halves.float().sum()
        assert total is not None
    [found] = [f for f in w.findings if f.code == "TP150"]
    assert "left on the host by .to()" not in found.message
