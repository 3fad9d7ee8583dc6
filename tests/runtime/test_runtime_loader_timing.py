"""DataLoader timing: later batches are fetched unobserved, so waits are the program's own."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from torchport.runtime import watch
from torchport.runtime.observer import Observer


class Spy(Dataset[torch.Tensor]):
    """Notes, per sample, whether torchport's observer saw the torch calls made for it."""

    def __init__(self, device: str | None = None) -> None:
        self.device = device
        self.observed: list[bool] = []

    def __len__(self) -> int:
        return 12

    def __getitem__(self, i: int) -> torch.Tensor:
        mode = torch.overrides._get_current_function_mode()
        self.observed.append(isinstance(mode, Observer))
        values = torch.from_numpy(np.full(3, float(i)))  # float64, as NumPy makes it
        return values if self.device is None else values.to(self.device)


def _epochs(loader: DataLoader[torch.Tensor], epochs: int) -> list[torch.Tensor]:
    return [batch for _ in range(epochs) for batch in loader]


def test_only_the_first_batch_of_each_epoch_is_fetched_observed() -> None:
    data = Spy()
    with watch():
        batches = _epochs(DataLoader(data, batch_size=4), epochs=2)
    assert data.observed == ([True] * 4 + [False] * 8) * 2
    assert [b[:, 0].tolist() for b in batches[:3]] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


def test_float64_made_in_getitem_is_still_traced_to_its_line() -> None:
    data = Spy()
    with watch(simulate="cuda") as w:
        for batch in DataLoader(data, batch_size=4):
            batch.to("cuda")
    [finding] = [f for f in w.findings if f.code == "TP302"]
    assert "torch.from_numpy" in finding.message
    assert "test_runtime_loader_timing.py" in finding.message


def test_a_dataset_that_uses_the_simulated_device_stays_observed() -> None:
    data = Spy(device="cuda")
    with watch(simulate="cuda"):
        batches = _epochs(DataLoader(data, batch_size=4), epochs=1)
    assert data.observed == [True] * 12
    assert all(b.device == torch.device("cuda", 0) for b in batches)


def test_the_observer_is_back_in_place_after_each_fetch() -> None:
    with watch():
        for _ in DataLoader(Spy(), batch_size=4):
            assert isinstance(torch.overrides._get_current_function_mode(), Observer)
    assert torch.overrides._get_current_function_mode() is None
