from __future__ import annotations

import pytest
import torch

from torchport.transfer import default_device


def test_override_names_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHPORT_DEVICE", " cpu ")
    assert default_device() == torch.device("cpu")


def test_malformed_override_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHPORT_DEVICE", "gpu0")
    with pytest.raises(ValueError, match=r"TORCHPORT_DEVICE='gpu0' is not a device"):
        default_device()


def test_override_naming_a_missing_gpu_fails_instead_of_falling_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = f"cuda:{torch.cuda.device_count()}"  # one past the last GPU, on any machine
    monkeypatch.setenv("TORCHPORT_DEVICE", missing)
    with pytest.raises(RuntimeError, match=rf"TORCHPORT_DEVICE='{missing}'.*not usable"):
        default_device()


def test_override_past_the_last_gpu_of_a_cuda_machine_names_the_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setenv("TORCHPORT_DEVICE", "cuda:1")
    with pytest.raises(RuntimeError, match=r"index 1 is out of range: 1 cuda device"):
        default_device()


needs_accelerator_api = pytest.mark.skipif(
    not hasattr(torch, "accelerator"), reason="torch.accelerator is new in torch 2.6"
)


@needs_accelerator_api
def test_no_accelerator_means_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHPORT_DEVICE", raising=False)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    assert default_device() == torch.device("cpu")


@needs_accelerator_api
def test_current_accelerator_is_preferred(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHPORT_DEVICE", raising=False)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda: torch.device("xpu"))
    monkeypatch.setattr(torch.accelerator, "current_device_index", lambda: 3)
    assert default_device() == torch.device("xpu", 3)


def test_torch_without_accelerator_module_probes_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHPORT_DEVICE", raising=False)
    monkeypatch.delattr(torch, "accelerator", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert default_device() == torch.device("cuda", 1)
