"""``torch.save`` and ``torch.load`` of simulated tensors, placed as on a real GPU.

On a GPU, ``torch.save`` records each storage's device ("cuda:0") and ``torch.load`` puts it
back there unless ``map_location`` says otherwise, for tensors anywhere in the pickle: a state
dict, an optimizer state, or a whole pickled ``nn.Module``. Here a simulated tensor is saved as
its CPU data under its simulated device's tag, so the file is what a GPU run writes (and loads
on any machine with ``map_location``), and loading routes each storage through torch's own
``map_location`` hook: storages bound for the simulated device are kept on the CPU, and the
tensors built on them are wrapped as simulated tensors once the pickle is read.

A ``map_location`` that is a function is the user's own placement and is called as it is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchport.runtime import simtensor
from torchport.runtime.simtensor import SimTensor

if TYPE_CHECKING:
    from torchport.runtime.simulate import Simulation

Patch = tuple[Any, str, Any]


def save_load_patches(simulation: Simulation) -> list[Patch]:
    """(owner, name, stand-in) for torch.save, torch.load and the storage location tag."""
    from torch import serialization

    return [
        (torch, "save", _save(torch.save)),
        (serialization, "location_tag", _location_tag(serialization.location_tag)),
        (torch, "load", _load(torch.load, simulation)),
    ]


def _save(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def save(*args: Any, **kwargs: Any) -> Any:
        # SimTensor.__reduce_ex__ notes each saved storage's simulated device, for this save.
        simtensor.SAVED_DEVICES.clear()
        simtensor.SAVING.append(True)
        try:
            return original(*args, **kwargs)
        finally:
            simtensor.SAVING.pop()
            simtensor.SAVED_DEVICES.clear()

    return save


def _location_tag(original: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(original)
    def location_tag(storage: Any) -> str:
        device = simtensor.SAVED_DEVICES.get(storage.data_ptr())
        return str(device) if device is not None else original(storage)

    return location_tag


def _load(original: Callable[..., Any], simulation: Simulation) -> Callable[..., Any]:
    @functools.wraps(original)
    def load(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        if callable(map_location):
            return original(f, map_location, *args, **kwargs)
        placed: dict[int, torch.device] = {}

        def restore(storage: Any, location: str) -> Any:
            wanted = _wanted(map_location, location)
            device = simulation.resolve(wanted)
            if device is None:
                return torch.serialization.default_restore_location(storage, wanted)  # type: ignore[no-untyped-call]
            placed[storage.data_ptr()] = device
            return storage

        loaded = original(f, restore, *args, **kwargs)
        return _place(loaded, placed, {}) if placed else loaded

    return load


def _wanted(map_location: Any, location: str) -> str:
    """Where torch.load's own rules send a storage saved at ``location``."""
    if map_location is None:
        return location
    if isinstance(map_location, dict):
        return str(map_location.get(location, location))
    return str(map_location)


def _place(value: Any, placed: dict[int, torch.device], memo: dict[int, Any]) -> Any:
    """``value`` with each tensor on a storage bound for the simulated device wrapped."""
    if id(value) in memo:
        return memo[id(value)]
    out = value
    if isinstance(value, torch.Tensor) and not isinstance(value, SimTensor):
        device = placed.get(value.untyped_storage().data_ptr())
        if device is not None:
            out = _simulated(value, device)
    elif isinstance(value, nn.Module):
        for module in value.modules():
            _place_module(module, placed, memo)
    elif isinstance(value, dict):
        for key, item in value.items():
            value[key] = _place(item, placed, memo)
    elif isinstance(value, list):
        value[:] = [_place(item, placed, memo) for item in value]
    elif isinstance(value, tuple):
        items = [_place(item, placed, memo) for item in value]
        out = type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    memo[id(value)] = out
    return out


def _place_module(module: nn.Module, placed: dict[int, torch.device], memo: dict[int, Any]) -> None:
    for store in (module._parameters, module._buffers):
        for name, tensor in store.items():
            if tensor is not None:
                store[name] = _place(tensor, placed, memo)
    for name, attribute in vars(module).items():
        if isinstance(attribute, torch.Tensor):
            setattr(module, name, _place(attribute, placed, memo))


def _simulated(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    data = SimTensor(tensor.detach(), device, requires_grad=tensor.requires_grad)
    if isinstance(tensor, nn.Parameter):
        return nn.Parameter(data, requires_grad=tensor.requires_grad)
    return data
