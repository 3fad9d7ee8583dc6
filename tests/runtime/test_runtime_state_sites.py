"""A parameter or buffer left on the CPU is traced to the user's line that built its module."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from torchport.findings import Finding
from torchport.runtime import watch


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


def _meeting(w: watch) -> Finding:
    [found] = [f for f in w.findings if f.code == "TP150"]
    return found


class Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Linear(4, 4)
        self.heads = {"a": nn.Linear(4, 2)}  # built here

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.heads["a"](self.trunk(x))


def test_a_layer_in_a_plain_dict_is_traced_to_where_it_was_built() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError):
        model = Heads().to("cuda")
        model(torch.randn(3, 4, device="cuda"))
    assert [r.line for r in _meeting(w).related] == [_line("# built here")]


def test_a_loss_never_moved_is_traced_to_where_its_weight_was_given() -> None:
    weights = torch.tensor([1.0, 3.0])  # made before the watch: no origin of its own
    with watch("cuda") as w, pytest.raises(RuntimeError):
        criterion = nn.CrossEntropyLoss(weight=weights)  # weighted here
        logits = torch.randn(4, 2, device="cuda")
        criterion(logits, torch.zeros(4, dtype=torch.long, device="cuda"))
    assert _line("# weighted here") in [r.line for r in _meeting(w).related]


class Distiller(nn.Module):
    def __init__(self, student: nn.Module) -> None:
        super().__init__()
        self.student = student
        self.token = nn.Parameter(torch.zeros(1, 4))  # token set here

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.student(x), self.token.expand(len(x), -1)], dim=1)


def test_a_view_of_a_parameter_names_where_its_module_was_made_and_left_unmoved() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError):
        student = nn.Linear(4, 4).to("cuda")
        distiller = Distiller(student)  # made here, never moved
        distiller(torch.randn(3, 4, device="cuda"))
    related = [r.line for r in _meeting(w).related]
    assert related == [_line("# token set here"), _line("# made here, never moved")]


def causal_mask(size: int) -> torch.Tensor:
    return torch.ones(size, size).triu(1).bool()


class Decoder(nn.Module):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.mask = causal_mask(size)  # a plain attribute, set here

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.proj(x) @ self.proj(x).t()
        n = len(x)
        return scores.masked_fill(self.mask[:n, :n], float("-inf"))


def test_a_slice_of_a_plain_tensor_attribute_names_where_the_attribute_was_set() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError):
        Decoder(8).to("cuda")(torch.randn(3, 4, device="cuda"))
    assert _line("# a plain attribute, set here") in [r.line for r in _meeting(w).related]


def test_moving_the_model_keeps_each_parameter_object() -> None:
    with watch("cuda"):
        layer = nn.Linear(3, 2)
        before = layer.weight
        layer.to("cuda")
        assert layer.weight is before


def test_a_host_tensor_computed_from_one_of_known_origin_keeps_that_origin() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError):
        coords = torch.rand(2, 5, device="cuda")
        tours = torch.stack([torch.randperm(5) for _ in range(2)])  # drawn here
        coords.gather(1, tours)
    assert [r.line for r in _meeting(w).related] == [_line("# drawn here")]
