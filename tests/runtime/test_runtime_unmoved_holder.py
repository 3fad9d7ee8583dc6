"""A buffer of a module never moved meets the device outside any forward (a metric's
``update``): the line that made that module is named, where no running module can say it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from torchport.runtime import watch


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


class Counts(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.register_buffer("seen", torch.zeros(n, dtype=torch.long))

    def update(self, labels: torch.Tensor) -> None:
        self.seen += torch.bincount(labels, minlength=self.seen.numel())


class Learner:
    def __init__(self, model: nn.Module, device: str) -> None:
        self.model = model.to(device)
        self.counts = Counts(4)  # made here, never moved


def test_a_metric_left_on_the_host_names_the_line_that_made_it() -> None:
    with pytest.raises(RuntimeError, match="same device"), watch("cuda") as w:
        learner = Learner(nn.Linear(3, 4), "cuda")
        logits = learner.model(torch.randn(8, 3, device="cuda"))
        learner.counts.update(logits.argmax(1))
    [found] = [f for f in w.findings if f.code == "TP150"]
    assert _line("# made here, never moved") in [r.line for r in found.related]
