"""Reads of device data that the observer's generic handlers would let pass unremarked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from torchport.findings import Fix
from torchport.rules.device import NumpyOfDeviceTensor
from torchport.rules.transfer import TensorFromDeviceScalars
from torchport.runtime.sites import user_site

if TYPE_CHECKING:
    from torchport.runtime.observer import Handler, Observer


def masked_index(
    observer: Observer, base: Handler, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``x[mask]`` with a boolean mask on the device: the result's size is read back (a sync).
    ``x[indices]`` with NumPy indices and ``x`` on the device: a copy of them (TP104)."""
    index = args[1] if len(args) > 1 else None
    if isinstance(index, tuple):
        index = next((i for i in index if isinstance(i, torch.Tensor) or _is_ndarray(i)), None)
    if _is_ndarray(index) and isinstance(args[0], torch.Tensor) and args[0].device.type != "cpu":
        observer.transfers.numpy_indices(args[0].device)
    if (
        isinstance(index, torch.Tensor)
        and index.dtype == torch.bool
        and index.device.type != "cpu"
        and index.dim() > 0
    ):
        observer.on_sync("tensor[bool mask]", index)
    return base(func, args, kwargs)


def _is_ndarray(value: object) -> bool:
    kind = type(value)  # NumPy is not imported for this: it is the program's, if anyone's
    return kind.__name__ == "ndarray" and kind.__module__ == "numpy"


def numpy_of_device_tensor(observer: Observer, tensor: torch.Tensor) -> None:
    """TP108: NumPy asked for a device tensor (torch raises next, naming no line of the user's)."""
    site = user_site(".numpy()")
    observer.add(
        NumpyOfDeviceTensor.finding(
            f"NumPy is asked for a tensor on {tensor.device}: torch refuses (NumPy reads "
            "host memory only)",
            None if site is None else site.location(),
            Fix("copy it to the host first: tensor.detach().cpu().numpy()"),
        ),
        site,
    )


# below this many device tensors in torch.tensor's list, the copies cost little
MANY_SCALARS = 8


def tensor_from_device_scalars(
    observer: Observer, call: str, data: list[Any] | tuple[Any, ...]
) -> None:
    """TP254: ``torch.tensor`` of a list of many device tensors, each copied on its own."""
    count = sum(1 for item in data if isinstance(item, torch.Tensor))
    if count < MANY_SCALARS:
        return
    site = user_site(call)
    observer.add(
        TensorFromDeviceScalars.finding(
            f"{call} reads {count} device tensors of a list one by one: {count} copies to "
            "the host, each waiting for the GPU",
            None if site is None else site.location(),
            Fix("join them on the device first: torch.stack(values), then one .cpu()"),
        ),
        site,
    )
