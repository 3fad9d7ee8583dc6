"""Synchronizations that library code makes on the user's behalf: avoidable or not, and how.

A sync that the user's own line makes (``loss.item()``) is theirs to move. One made inside torch
or another library (``scaler.step(opt)`` reads ``found_inf`` with ``.item()``) is reported at the
user's line that called the library only when the user has a cheaper way, and the finding names
that way; one with no cheaper way is kept in the sync inventory but is no finding. Each cause
below was read from torch's own code (torch 2.4 to 2.13); an unknown library sync is reported
with the library function that made it, so the user can judge.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch

from torchport.runtime.record import Cause
from torchport.runtime.sites import Provenance, is_torchport_file, is_user_file

Rule = Callable[[FrameType, torch.Tensor | None, Provenance], Cause]


def _grad_scaler_step(frame: FrameType, tensor: torch.Tensor | None, _: Provenance) -> Cause:
    # GradScaler.step reads found_inf with .item() unless the optimizer has its own
    # amp-scaling step (the fused Adam, AdamW and SGD kernels check found_inf on the device).
    optimizer = _local(frame, "optimizer")
    name = type(optimizer).__name__ if optimizer is not None else "the optimizer"
    if optimizer is None or not _accepts(type(optimizer), "fused"):
        return Cause("GradScaler.step", None)
    return Cause(
        "GradScaler.step",
        f"create {name} with fused=True: GradScaler then skips steps with inf/NaN gradients on "
        "the device instead of reading found_inf with .item() on every step",
    )


def _optimizer_step_counter(
    frame: FrameType, tensor: torch.Tensor | None, provenance: Provenance
) -> Cause:
    # Non-capturable optimizers keep ``state["step"]`` on the CPU and read it with .item(),
    # which is free there; load_state_dict leaves a step that arrives on the device where it
    # is (Optimizer._process_value_according_to_param_policy), so every step then syncs.
    device = tensor.device if tensor is not None else "the device"
    origin = provenance.get(tensor) if tensor is not None else None
    loaded = f" (the state was loaded at {origin})" if origin is not None else ""
    return Cause(
        "optimizer.step",
        f"the optimizer's step counters are on {device}{loaded}, so every step reads them with "
        ".item(): load the checkpoint on the CPU (torch.load(..., map_location='cpu')) and let "
        "optimizer.load_state_dict place the state",
        warn=True,
    )


def _distribution_validation(frame: FrameType, tensor: torch.Tensor | None, _: Provenance) -> Cause:
    owner = _local(frame, "self")
    name = type(owner).__name__ if owner is not None else "the distribution"
    return Cause(
        f"{name} argument validation",
        f"create {name} with validate_args=False (or call torch.distributions.Distribution."
        "set_default_validate_args(False) once): validation reads its check on the host",
    )


def _clip_nonfinite_check(frame: FrameType, tensor: torch.Tensor | None, _: Provenance) -> Cause:
    return Cause(
        "clip_grad_norm_(error_if_nonfinite=True)",
        "drop error_if_nonfinite=True: it reads the norm on the host on every call",
    )


_RULES: dict[tuple[str, str], Rule] = {
    ("amp/grad_scaler.py", "_maybe_opt_step"): _grad_scaler_step,
    ("optim/optimizer.py", "_get_value"): _optimizer_step_counter,
    ("distributions/distribution.py", "__init__"): _distribution_validation,
    ("distributions/distribution.py", "_validate_sample"): _distribution_validation,
    ("nn/utils/clip_grad.py", "_get_total_norm"): _clip_nonfinite_check,
}
_SUFFIXES = tuple({suffix for suffix, _ in _RULES})


def library_cause(
    tensor: torch.Tensor | None, provenance: Provenance, start: int = 2
) -> Cause | None:
    """None when the user's own code made the sync; else why a library made it."""
    frame: FrameType | None = inspect.currentframe()
    for _ in range(start):
        frame = frame.f_back if frame is not None else None
    while frame is not None and (
        is_torchport_file(frame.f_code.co_filename) or _op_wrapper(frame.f_code.co_filename)
    ):
        frame = frame.f_back
    if frame is None or is_user_file(frame.f_code.co_filename):
        return None
    innermost = frame
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        rule = _rule_for(frame)
        if rule is not None:
            return rule(frame, tensor, provenance)
        frame = frame.f_back
    return Cause(_describe(innermost), "")


# torch's own Python layer of a public op (``torch.unique`` is written in torch/functional.py
# and dispatches through torch/overrides.py): a sync there is the op's, made at the user's call.
_OP_WRAPPERS = ("torch/functional.py", "torch/overrides.py", "torch/_jit_internal.py")


def _op_wrapper(filename: str) -> bool:
    return filename.replace(os.sep, "/").endswith(_OP_WRAPPERS)


def _rule_for(frame: FrameType) -> Rule | None:
    filename = frame.f_code.co_filename.replace(os.sep, "/")
    if not filename.endswith(_SUFFIXES):
        return None
    for (suffix, function), rule in _RULES.items():
        if frame.f_code.co_name == function and filename.endswith(suffix):
            return rule
    return None


def _describe(frame: FrameType) -> str:
    module = frame.f_globals.get("__name__", "")
    return f"{module}.{frame.f_code.co_name}" if module else frame.f_code.co_name


def _local(frame: FrameType, name: str) -> Any:
    return frame.f_locals.get(name)


def _accepts(cls: type, parameter: str) -> bool:
    try:
        return parameter in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False
