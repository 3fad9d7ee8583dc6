"""Lazy modules (``nn.LazyLinear``) moved to the simulated device before their first call.

``model.to("cuda")`` moves an uninitialized parameter as an empty tensor, and its first
forward makes the weight on the device that empty tensor is on. The simulation cannot hold
an uninitialized parameter as a simulated tensor (it refuses every op but a few), so it leaves
the parameter as it is and remembers the device it was sent to; ``materialize`` then makes
the weight on the host and puts it on that simulated device, in the same object, as a GPU
would have made it there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from torch.utils.weak import WeakIdKeyDictionary

__all__ = ["LAZY_CLASSES", "is_lazy", "materialize", "sent_to"]

# the classes whose ``materialize`` the simulation patches
LAZY_CLASSES = (UninitializedParameter, UninitializedBuffer)
# uninitialized parameter or buffer -> the simulated device it was moved to
_SENT: WeakIdKeyDictionary = WeakIdKeyDictionary()


def sent_to(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` itself, its data to be made on ``device`` (``Module.to`` then sets it as
    its own data: no swap, see simulate._keep_parameters)."""
    _SENT[tensor] = device
    return tensor


def materialize(
    original: Callable[..., None], onto: Callable[[torch.Tensor, torch.device], torch.Tensor]
) -> Callable[..., None]:
    """``materialize`` that puts the data where the tensor was sent (``onto`` makes a
    simulated tensor of a host one)."""

    def patched(self: Any, shape: Any, device: Any = None, dtype: Any = None) -> None:
        # popped: swap_tensors refuses a tensor with a weak reference to it
        target = _SENT.pop(self, None) if device is None else None  # type: ignore[no-untyped-call]
        original(self, shape, device, dtype)
        if target is None:
            return
        data = onto(self.detach(), target)
        made = (
            torch.nn.Parameter(data, requires_grad=self.requires_grad)
            if isinstance(self, torch.nn.Parameter)
            else data
        )
        torch.utils.swap_tensors(self, made)  # type: ignore[no-untyped-call]

    return patched
