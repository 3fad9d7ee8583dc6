"""Host tensors that a real GPU run has too, told apart from the user's device mistakes.

Two kinds of CPU tensor meet device tensors on a real GPU without error:

- Arguments CUDA wants on the host. ``_pack_padded_sequence`` reads ``lengths`` with a CPU
  pointer and refuses a device tensor (ATen's ``checkLongTensor`` in PackedSequence.cpp: "'lengths'
  argument should be a 1D CPU int64 tensor"); the ``batch_sizes`` it returns stay on the CPU and
  are read the same way by ``_pad_packed_sequence`` and the packed RNN kernels (``gru.data``...).
- Tensors that C++ makes inside a composite op (one with a CompositeImplicitAutograd kernel,
  which runs above the Python dispatch key). ``torch.quantile(x, 0.02)`` makes
  ``at::scalar_tensor(q, self.options())`` and expands it: on a GPU ``self.options()`` names
  the device, here it names the simulated tensor's real CPU storage. Such a tensor is on the
  device on a GPU, so the op is no mismatch. It is told apart from the user's CPU tensor by the
  call the user made: when every tensor the user handed to that call is on the simulated device,
  a host tensor that reaches an inner op was made inside it. A call that was given a CPU tensor
  keeps the strict check (``F.linear(x_gpu, w_cpu)`` still fails as on a GPU).
"""

from __future__ import annotations

import os
import sys
from types import CodeType, FrameType
from typing import Any

import torch

_aten = torch.ops.aten
# op -> the argument that must be a 1-D CPU int64 tensor on a GPU.
HOST_ARGUMENTS: dict[Any, str] = {
    _aten._pack_padded_sequence.default: "lengths",
    _aten._pad_packed_sequence.default: "batch_sizes",
    _aten._pack_padded_sequence_backward.default: "batch_sizes",
    _aten.rnn_relu.data: "batch_sizes",
    _aten.rnn_tanh.data: "batch_sizes",
    _aten.gru.data: "batch_sizes",
    _aten.lstm.data: "batch_sizes",
}
# Ops that refuse a device tensor there (the packed RNN kernels just read it).
_CHECKED = {_aten._pack_padded_sequence.default, _aten._pad_packed_sequence.default}
# op -> the positions of its results that are made from the host argument's options.
HOST_OUTPUTS: dict[Any, frozenset[int]] = {
    _aten._pack_padded_sequence.default: frozenset({1}),
    _aten._pad_packed_sequence.default: frozenset({1}),
}


# c10's names of the dtypes, as its messages print them.
_SCALAR_TYPES = {
    torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
    torch.uint8: "Byte", torch.bool: "Bool", torch.float32: "Float", torch.float64: "Double",
    torch.float16: "Half", torch.bfloat16: "BFloat16",
}  # fmt: skip


def host_argument_error(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The message a GPU raises when ``func``'s host argument is on the device (None: it is not)."""
    if func not in _CHECKED:
        return None
    value = argument(func, args, kwargs, HOST_ARGUMENTS[func])
    if not isinstance(value, torch.Tensor) or value.device.type == "cpu":
        return None
    kind = _SCALAR_TYPES.get(value.dtype, str(value.dtype).removeprefix("torch."))
    return (
        "'lengths' argument should be a 1D CPU int64 tensor, but got "
        f"{value.dim()}D {value.device} {kind} tensor"
    )


def argument(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> Any:
    if name in kwargs:
        return kwargs[name]
    for index, schema_argument in enumerate(func._schema.arguments):
        if schema_argument.name == name:
            return args[index] if index < len(args) else None
    return None


# The observer's handlers that call the user's torch function (registered by the observer):
# their ``args`` and ``kwargs`` are what the user passed.
HANDLERS: set[CodeType] = set()
_OWN_FILES = {os.path.abspath(__file__)}
_TORCH_DIR = os.path.dirname(os.path.abspath(str(torch.__file__))) + os.sep


def own_file(filename: str) -> None:
    """Frames of ``filename`` (the simulated tensor's module) are skipped on the way up."""
    _OWN_FILES.add(os.path.abspath(filename))


def made_inside_the_call() -> bool:
    """Whether a host tensor met here was made inside the torch call the user made.

    True when the innermost frame outside the simulation and torch's own Python is an observer
    handler, and no tensor among the arguments it was given is a plain host tensor. Called only
    on a mismatch, never on the hot path.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) in _OWN_FILES:
        frame = frame.f_back
    while frame is not None and frame.f_code.co_filename.startswith(_TORCH_DIR):
        frame = frame.f_back
    if frame is None or frame.f_code not in HANDLERS:
        return False
    given = frame.f_locals
    values = [*given.get("args", ()), *dict(given.get("kwargs") or {}).values()]
    return not any(_host_tensor(value) for value in values)


def _host_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.device.type == "cpu"
    if isinstance(value, (list, tuple)):
        return any(_host_tensor(item) for item in value)
    return False


# aten name -> (position, name) of its host argument, as Python calls it.
_HOST_BY_NAME = {
    op._schema.name.split("::")[-1]: next(
        (i, a.name) for i, a in enumerate(op._schema.arguments) if a.name == name
    )
    for op, name in HOST_ARGUMENTS.items()
}
# Results that a composite op makes from a host argument's options (pad_packed_sequence's
# lengths, made from batch_sizes): on the host on a GPU too.
_HOST_RESULTS = {"_pad_packed_sequence": frozenset({1})}
_NONE: frozenset[int] = frozenset()
_COMPOSITE = "CompositeImplicitAutograd"


def is_composite(func: Any) -> bool:
    """Whether ``func`` runs an aten op with a CompositeImplicitAutograd kernel (see above)."""
    name = getattr(func, "__name__", None)
    packet = getattr(_aten, name, None) if isinstance(name, str) else None
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return False
    for overload in packet.overloads():  # type: ignore[no-untyped-call]
        try:  # some listed overloads (sort.int) are TorchScript's only, with no aten op
            op = getattr(packet, overload)
            if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), _COMPOSITE):
                return True
        except RuntimeError:
            continue
    return False


def host_results(func: Any) -> frozenset[int]:
    """Positions of ``func``'s results that a GPU also leaves on the host."""
    return _HOST_RESULTS.get(getattr(func, "__name__", ""), _NONE)


def given_device(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.device | None:
    """The simulated device of every tensor the user gave but a host argument (None: some is
    a host tensor, or none is given, or they are on two devices)."""
    devices: set[torch.device] = set()
    host = _HOST_BY_NAME.get(getattr(func, "__name__", ""))
    given = [v for i, v in enumerate(args) if host is None or i != host[0]]
    given += [v for k, v in kwargs.items() if host is None or k != host[1]]
    for value in given:
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, torch.Tensor):
                devices.add(item.device)
    if len(devices) != 1:
        return None
    device = devices.pop()
    return None if device.type == "cpu" else device


def has_host_tensor(value: Any) -> bool:
    """Whether a result is, or holds, a plain host tensor."""
    if type(value) is torch.Tensor:
        return True
    return isinstance(value, (list, tuple)) and any(type(item) is torch.Tensor for item in value)
