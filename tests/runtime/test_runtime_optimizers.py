"""TP356: an optimizer whose eps float16 rounds to 0 steps float16 parameters.

Each case trains a small model for a few steps under the simulated GPU, the way a program that
picks ``torch.float16 if cuda`` does on its GPU path.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from torchport.runtime import watch


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


def _train(model: torch.nn.Module, optimizer: torch.optim.Optimizer, dtype: torch.dtype) -> None:
    for _ in range(3):
        x = torch.randn(8, 4, device="cuda", dtype=dtype)
        loss = model(x).float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_adamw_with_the_default_eps_over_a_half_model_is_reported_at_its_line() -> None:
    with watch("cuda") as w:
        model = torch.nn.Linear(4, 2).to("cuda").half()  # cast here
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)  # built here
        _train(model, optimizer, torch.float16)
    [found] = [f for f in w.findings if f.code == "TP356"]  # once, though it stepped 3 times
    assert found.location is not None and found.location.line == _line("# built here")
    assert [r.line for r in found.related] == [_line("# cast here")]
    assert "AdamW" in found.message and "eps=1e-08" in found.message


def test_layers_built_in_float16_point_at_where_they_were_built() -> None:
    with watch("cuda") as w:
        model = torch.nn.Linear(4, 2, device="cuda", dtype=torch.float16)  # made in float16
        optimizer = torch.optim.RMSprop(model.parameters(), eps=1e-9)
        _train(model, optimizer, torch.float16)
    [found] = [f for f in w.findings if f.code == "TP356"]
    assert [r.line for r in found.related] == [_line("# made in float16")]


SAFE: list[tuple[str, torch.dtype, Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer]]] = [
    ("an eps float16 holds", torch.float16, lambda p: torch.optim.Adam(p, eps=1e-4)),
    ("no eps (SGD)", torch.float16, lambda p: torch.optim.SGD(p, lr=0.1)),
    ("float32 parameters", torch.float32, torch.optim.Adam),
    ("bfloat16 holds 1e-8", torch.bfloat16, torch.optim.AdamW),
]


@pytest.mark.parametrize(("case", "dtype", "make"), SAFE, ids=[case for case, _, _ in SAFE])
def test_optimizers_whose_eps_survives_are_not_reported(
    case: str,
    dtype: torch.dtype,
    make: Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer],
) -> None:
    with watch("cuda") as w:
        model = torch.nn.Linear(4, 2).to("cuda", dtype)
        _train(model, make(list(model.parameters())), dtype)
    assert [f for f in w.findings if f.code == "TP356"] == [], case


def test_frozen_float16_parameters_are_not_reported() -> None:
    with watch("cuda") as w:
        frozen = torch.nn.Linear(4, 4).to("cuda").half().requires_grad_(False)
        head = torch.nn.Linear(4, 2).to("cuda")
        optimizer = torch.optim.Adam([*frozen.parameters(), *head.parameters()])
        for _ in range(2):
            loss = head(frozen(torch.randn(8, 4, device="cuda").half()).float()).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert [f for f in w.findings if f.code == "TP356"] == []


def test_a_step_on_state_loaded_before_the_model_moved_names_the_load() -> None:
    trained = torch.nn.Linear(4, 2)
    optimizer = torch.optim.Adam(trained.parameters())
    _train_on_host(trained, optimizer)
    state = optimizer.state_dict()
    with watch("cuda") as w, pytest.raises(RuntimeError):
        model = torch.nn.Linear(4, 2)
        resumed = torch.optim.Adam(model.parameters())
        resumed.load_state_dict(state)  # loaded while the model is on the CPU
        model.to("cuda")
        _train(model, resumed, torch.float32)
    [found] = [f for f in w.findings if f.code == "TP150"]
    assert _line("# loaded while the model is on the CPU") in [r.line for r in found.related]
    assert "optimizer state loaded at" in found.message


def _train_on_host(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
