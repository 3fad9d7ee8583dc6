"""Observe mode: never changes results; explains device errors; records inventories."""

from __future__ import annotations

import traceback

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import torchport
from torchport.runtime import watch


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 8 * 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv(x))
        return self.fc(h.flatten(1) + torch.randn(h.shape[0], 1) * 0.01)


def _train() -> list[torch.Tensor]:
    torch.manual_seed(0)
    data = np.random.default_rng(0).standard_normal((32, 1, 8, 8)).astype(np.float32)
    loader = DataLoader(
        TensorDataset(torch.from_numpy(data), torch.arange(32) % 3), batch_size=8, shuffle=True
    )
    model = ConvNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss.item()
    return [p.detach().clone() for p in model.parameters()]


def test_observe_mode_leaves_training_results_bit_identical() -> None:
    plain = _train()
    with watch(check_finite=True):
        observed = _train()
    assert len(plain) == len(observed)
    assert all(torch.equal(a, b) for a, b in zip(plain, observed, strict=True))


def test_watch_is_reexported_and_works_as_a_decorator() -> None:
    @torchport.watch()
    def mix() -> torch.Tensor:
        return torch.ones(3) * torch.from_numpy(np.ones(3))

    assert mix.__name__ == "mix"
    assert mix().dtype == torch.float64
    assert torchport.watch is watch


def test_device_error_keeps_type_and_traceback_and_names_each_tensor() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc1(x)

    with watch("cuda") as w:
        model = Net().to("cuda")
        batch = torch.zeros(1, 2)
        with pytest.raises(RuntimeError) as info:
            model(batch)
    message = str(info.value)
    assert message.startswith("Expected all tensors to be on the same device")
    assert "created at" in message and "by torch.zeros" in message
    assert "model.fc1 (Linear, weights on cuda:0)" in message
    assert "parameter model.fc1.weight" in message
    frames = traceback.extract_tb(info.value.__traceback__)
    assert any(f.name == "forward" and f.filename == __file__ for f in frames)
    assert [f.code for f in w.findings] == ["TP150"]


def test_dtype_error_is_explained_with_the_float64_origin() -> None:
    with watch(), pytest.raises(RuntimeError) as info:
        nn.Linear(3, 1)(torch.from_numpy(np.ones((2, 3))))
    assert "by torch.from_numpy" in str(info.value)


def test_strict_mode_raises_at_the_first_error_finding() -> None:
    from torchport.runtime.observer import StrictFindingError

    with pytest.raises(StrictFindingError, match="TP303"), watch(strict=True):
        nn.Linear(2, 1)(torch.ones(1, 2, dtype=torch.int64))


def test_transfer_inventory_counts_bytes_pinned_and_non_blocking_by_site() -> None:
    with watch("cuda") as w:
        for _ in range(3):
            torch.ones(10).pin_memory().to("cuda", non_blocking=True)
    rows = w.report().facts["transfers"]
    assert len(rows) == 1
    row = rows[0]
    assert (row["count"], row["bytes"], row["source"], row["non_blocking"]) == (
        3, 120, "pinned", True,
    )  # fmt: skip


def test_select_and_ignore_filter_findings() -> None:
    def mix() -> None:
        torch.ones(3) * torch.from_numpy(np.ones(3))

    with watch(ignore=["TP350"]) as ignored:
        mix()
    with watch(select=["TP3"]) as selected:
        mix()
    assert ignored.findings == []
    assert [f.code for f in selected.findings] == ["TP350"]


def test_observe_on_a_cuda_machine_counts_synchronize_and_puts_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[object] = []

    def synchronize(device: object = None) -> None:
        calls.append(device)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    with watch() as w:
        torch.cuda.synchronize()
    assert torch.cuda.synchronize is synchronize
    assert calls == [None]
    assert [row["call"] for row in w.report().facts["syncs"]] == ["torch.cuda.synchronize"]
