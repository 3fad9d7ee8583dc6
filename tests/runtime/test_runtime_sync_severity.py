"""A value read once a step is a suggestion; one read many times a step is a warning."""

from __future__ import annotations

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
