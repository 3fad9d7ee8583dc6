"""A torch function written in Python, run again with the observer watching inside it.

torch takes a function mode off the stack while the mode handles a call, so a factory inside a
torch function written in Python (``F.embedding_bag`` makes its offsets with
``device=input.device``) reaches the CUDA backend a CPU-only build lacks, and fails in
``torch.cuda._lazy_init`` before anything else of the function ran. Under ``--simulate`` the
observer then runs the function again with itself on the stack and the function's own
torch-function test off (else it would hand the call back to the mode), so that the factory is
routed to the simulated device like the program's own.
"""

from __future__ import annotations

import contextlib
import functools
import os
import traceback
import types
from collections.abc import Iterator
from typing import Any

import torch
from torch.autograd.function import BackwardCFunction

from torchport.runtime.patching import Patches

# the simulated tensor's module, whose dispatch runs ops on host data only
_RUNTIME = os.path.dirname(os.path.abspath(__file__))
_SIMTENSOR = os.path.join(_RUNTIME, "simtensor.py")
_HAS_TORCH_FUNCTION = (
    "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic"
)  # fmt: skip


def reached_real_cuda(func: Any, exc: Exception) -> bool:
    """An unobserved factory inside a Python-level torch function named the simulated device.

    Without CUDA in the build it fails in ``torch.cuda._lazy_init``. With CUDA (``--simulate``
    on a GPU machine) it makes a real device tensor, which fails as soon as a simulated
    tensor's host data meets it: an op inside the simulated tensor's dispatch, where every
    tensor the simulation hands on is on the host, finds one on "cuda" (``pca_lowrank`` draws
    its random basis with ``device=A.device``).
    """
    if not isinstance(func, types.FunctionType):
        return False
    if not isinstance(exc, AssertionError | RuntimeError):
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    if frames and frames[-1].name == "_lazy_init" and "cuda" in frames[-1].filename:
        return True
    message = str(exc)
    return (
        "Expected all tensors to be on the same device" in message
        and "cuda" in message
        and any(_in_dispatch(f) for f in frames)
        # raised by the op on host data, not by the simulation's own device check
        and os.path.dirname(os.path.abspath(frames[-1].filename)) != _RUNTIME
    )


def _in_dispatch(frame: traceback.FrameSummary) -> bool:
    return frame.name == "__torch_dispatch__" and os.path.abspath(frame.filename) == _SIMTENSOR


@contextlib.contextmanager
def observing(mode: torch.overrides.TorchFunctionMode, func: Any) -> Iterator[None]:
    """``mode`` on the stack and ``func``'s torch-function test off, for one call of it."""
    names = [n for n in _HAS_TORCH_FUNCTION if n in func.__globals__]
    saved = {n: func.__globals__[n] for n in names}
    torch.overrides._push_mode(mode)  # type: ignore[no-untyped-call]
    func.__globals__.update(dict.fromkeys(names, _no_torch_function))
    try:
        yield
    finally:
        func.__globals__.update(saved)
        torch.overrides._pop_mode()  # type: ignore[no-untyped-call]


def _no_torch_function(*args: Any) -> bool:
    return False


def observe_backward(mode: torch.overrides.TorchFunctionMode) -> Patches:
    """The ``backward`` of the program's autograd Functions runs with ``mode`` on the stack.

    The autograd engine calls it from C++ while the observer handles the program's
    ``backward()`` call, with the mode off the stack: its ops would reach the simulated
    tensors' dispatch unobserved. A composite op there (``F.one_hot``) then makes its tensors
    on the host, where a GPU makes them on the device, and the simulation reported a device
    mismatch that a GPU never raises. Observed, the op goes through the same handlers as in
    forward. Where a mode is on the stack already (the program's own), nothing changes.
    """
    patches = Patches()
    patches.wrap(BackwardCFunction, "apply", functools.partial(_observed_backward, mode))
    return patches


def _observed_backward(
    mode: torch.overrides.TorchFunctionMode, original: Any, ctx: Any, *args: Any
) -> Any:
    if getattr(mode, "closed", False) or torch._C._len_torch_function_stack() > 0:
        return original(ctx, *args)
    torch.overrides._push_mode(mode)  # type: ignore[no-untyped-call]
    try:
        return original(ctx, *args)
    finally:
        torch.overrides._pop_mode()  # type: ignore[no-untyped-call]
