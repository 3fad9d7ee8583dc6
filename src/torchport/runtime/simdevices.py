"""Which device an op on simulated tensors puts its result on, or the error a GPU raises.

The rules of the real backends, applied to the devices that :mod:`.simtensor` sees in an op's
arguments: one device for all, a 0-dim CPU tensor taken as a scalar anywhere, cross-device copies,
advanced indexing with host indices, host arguments that CUDA wants on the host and host tensors
torch makes itself (:mod:`.simhost`), and CUDA's own error messages otherwise.
"""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Any

import torch

from torchport.runtime import simhost

simhost.own_file(__file__)
Seen = list[tuple[int | str, torch.device, bool]]  # (argument, device, is 0-dim)


_aten = torch.ops.aten
# Ops whose tensors may sit on different devices; the result lives where ``self`` (or the
# ``device`` argument) says. ``_has_compatible_shallow_copy_type`` is Module.to's question
# whether the moved data can go into the same parameter (a CPU and a CUDA dense tensor can):
# asked under no_grad or inference_mode, it reached the device check.
_CROSS_DEVICE_OK = {
    _aten.copy_.default,
    _aten._to_copy.default,
    _aten.lift_fresh.default,
    _aten._has_compatible_shallow_copy_type.default,
}
# Advanced indexing. Reading (``x[i]``) accepts index tensors on the CPU or on x's device
# (ATen's check_indices_on_cpu_or_selfdevice); writing (``x[i] = v``, and the backward of a read)
# moves index tensors of any device to x's (ATen's make_info, "Ensure indices are on the same
# device as self") and a one-element 0-dim value too; any other value must be on x's device.
_INDEX_READ = {_aten.index.Tensor, _aten.index.Tensor_out, _aten._unsafe_index.Tensor}
_INDEX_WRITE = {
    _aten.index_put.default,
    _aten.index_put_.default,
    _aten._index_put_impl_.default,
    _aten._unsafe_index_put.default,
}


def device_error(message: str, kind: type[Exception] = RuntimeError) -> Exception:
    """The error a real GPU raises here, marked as the simulation's on purpose (not a bug of
    torchport's: the tests that run whole programs tell the two apart by this mark)."""
    error = kind(message)
    error._torchport_simulated = True  # type: ignore[attr-defined]
    return error


def without_host_argument(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], seen: Seen
) -> Seen:
    """``seen`` less the host argument of ``func`` (see simhost); its device's error if any."""
    message = simhost.host_argument_error(func, args, kwargs)
    if message is not None:
        raise device_error(message)
    name = simhost.HOST_ARGUMENTS[func]
    return [s for s in seen if not (s[1].type == "cpu" and argument_name(func, s[0]) == name)]


def common_device(func: Any, seen: Seen) -> torch.device | None:
    """The simulated device of the op's result (None: a host result), or the error the real
    backend raises for its mix of devices."""
    if func in _CROSS_DEVICE_OK:
        return _simulated(_self_device(seen))
    if func in _INDEX_READ or func in _INDEX_WRITE:
        return _simulated(_indexing_device(func, seen))
    common: torch.device | None = None
    for where, device, zero_dim in seen:
        if zero_dim and device.type == "cpu" and not _writes(func, where):
            continue  # a 0-dim CPU tensor read is a scalar to every backend (not one written)
        if common is None:
            common = device
        elif device != common:
            if _made_on_the_host_by_torch(seen):
                return next(d for _, d, _ in seen if d.type != "cpu")
            raise device_error(mismatch_message(func, common, argument_name(func, where), device))
    if common is None or common.type == "cpu":
        sims = [d for _, d, _ in seen if d.type != "cpu"]
        return sims[0] if sims else None
    return common


_WRITTEN: dict[Any, frozenset[str]] = {}


def _writes(func: Any, where: int | str) -> bool:
    """Whether the op writes argument ``where`` (``self`` of ``add_``, ``out=``): a 0-dim CPU
    tensor given there is an output, which CUDA refuses beside device operands."""
    written = _WRITTEN.get(func)
    if written is None:
        written = _WRITTEN[func] = frozenset(
            str(a.name)
            for a in func._schema.arguments
            if a.alias_info is not None and a.alias_info.is_write
        )
    return bool(written) and argument_name(func, where) in written


def _made_on_the_host_by_torch(seen: Seen) -> bool:
    """Whether the host tensors met are torch's own, made where a GPU makes them on the device:
    by the autograd engine in backward, or inside a composite op the user called (simhost)."""
    if len({device for _, device, _ in seen if device.type != "cpu"}) != 1:
        return False  # two simulated devices: a mismatch on any machine
    return _issued_by_autograd_engine() or simhost.made_inside_the_call()


_ENGINE_ENTRIES = {"_engine_run_backward", "backward", "grad"}
_RUNTIME = "torchport/runtime/"


def _issued_by_autograd_engine() -> bool:
    """Whether C++ code running a backward pass issued this op (no Python frame of its own).

    There, a plain CPU tensor mixed with simulated ones was made in C++ from a simulated
    tensor's options (which name its real CPU storage): a gradient buffer of the autograd
    engine, a bucket of DDP's reducer. On a GPU it would be on the device, so the op is not a
    device mismatch. A mismatch in the forward pass, or in a Python ``backward`` of the user's,
    still raises: those have their own Python frame.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _RUNTIME in frame.f_code.co_filename.replace(os.sep, "/"):
        frame = frame.f_back  # past the checks and the dispatch of the simulated tensor
    if frame is None:  # no Python caller at all: not the engine's backward either
        return False
    code = frame.f_code
    return code.co_name in _ENGINE_ENTRIES and code.co_filename.replace(os.sep, "/").endswith(
        ("torch/autograd/graph.py", "torch/autograd/__init__.py")
    )


def _simulated(device: torch.device | None) -> torch.device | None:
    return None if device is None or device.type == "cpu" else device


def _self_device(seen: Seen) -> torch.device | None:
    return next((device for where, device, _ in seen if where in (0, "self")), None)


def _indexing_device(func: Any, seen: Seen) -> torch.device | None:
    own = _self_device(seen)
    if own is None:
        return None
    for where, device, zero_dim in seen:
        name = argument_name(func, where)
        if name == "self" or device == own:
            continue
        if name == "indices":
            if func in _INDEX_READ and device.type != "cpu":
                raise device_error(
                    "indices should be either on cpu or on the same device as the indexed "
                    f"tensor ({own})"
                )
        elif not (name == "values" and zero_dim) and not _made_on_the_host_by_torch(seen):
            raise device_error(mismatch_message(func, own, name, device))
    return own


def argument_name(func: Any, where: int | str) -> str:
    if isinstance(where, str):
        return where
    arguments = func._schema.arguments
    return str(arguments[where].name) if where < len(arguments) else f"argument {where}"


def mismatch_message(func: Any, common: torch.device, name: str, other: torch.device) -> str:
    """The message the real CUDA/MPS kernel raises for an op that mixes devices."""
    if torch.Tag.pointwise in getattr(func, "tags", ()):
        return (
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{common} and {other}!"
        )
    backend = (common if common.type != "cpu" else other).type.upper()
    op = func._schema.name.split("::")[-1]
    return (
        f"Expected all tensors to be on the same device, but got {name} is on {other}, "
        f"different from other tensors on {common} "
        f"(when checking argument in method wrapper_{backend}_{op})"
    )
