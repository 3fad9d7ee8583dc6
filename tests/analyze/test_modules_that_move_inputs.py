"""TP102 (a CPU batch passed to a model on the device) leaves alone a module of the file that
moves what it is given itself: a data preprocessor (``cast_data``) called on raw batches."""

from __future__ import annotations

import textwrap

import pytest

from torchport.analyze.engine import analyze

PROGRAM = """
import torch
from torch import nn
from torch.utils.data import DataLoader


class Images(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {{"inputs": torch.rand(3, 8, 8)}}


class Preprocessor(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(1, 3, 1, 1))

    def cast(self, data):
        return {{k: {moved} for k, v in data.items()}}

    def forward(self, data):
        data = self.cast(data)
        return data["inputs"] - self.mean


def run(device):
    preprocessor = Preprocessor().to(device)
    for batch in DataLoader(Images(), batch_size=4):
        preprocessor(batch)
"""


@pytest.mark.parametrize(("moved", "reported"), [("v.to(self.mean.device)", False), ("v", True)])
def test_a_module_that_moves_its_inputs_gets_raw_batches(moved: str, reported: bool) -> None:
    source = textwrap.dedent(PROGRAM).format(moved=moved)
    found = [f for f in analyze(source, "t.py", lambda c: True) if f.code == "TP102"]
    assert bool(found) is reported
