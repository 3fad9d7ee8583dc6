"""Errors torch raises on a GPU whose cause is a porting mistake: each also becomes a finding.

The watch reports every failure with its line (failure.py); the few here name their mistake
and its fix, so that the report (and a CI gate on findings) says what to change.
"""

from __future__ import annotations

import os
import re
import traceback

import torch

from torchport.findings import Finding, Fix, Location
from torchport.rules.checkpoints import StateDictPrefixMismatch
from torchport.rules.device import ParameterMovedAtCreation
from torchport.rules.device_ops import FailsOnTheDevice
from torchport.rules.distributed import WrappedBeforeMoved
from torchport.runtime.failure import StrictFindingError
from torchport.runtime.sites import Site

_KNOWN = (
    (
        "device_ids and output_device arguments only work with",
        "DistributedDataParallel was given device_ids for a module still on the CPU",
        "move the module to its GPU first: DDP(model.to(device), device_ids=[local_rank])",
    ),
    (
        "module must have its parameters and buffers on device",
        "DataParallel runs a module that is not on its first GPU",
        "move the model to the GPU before wrapping it: nn.DataParallel(model.to(device))",
    ),
)


# torch's words for keys that differ only by a wrapper's `module.` prefix
_PREFIXED = re.compile(r'(Missing|Unexpected) key\(s\) in state_dict: "module\.')
_LOADING_INTO = re.compile(r"Error\(s\) in loading state_dict for (\w+)")


def finding_for(exc: BaseException, site: Site | None) -> Finding | None:
    """The finding the program's final error stands for, when it is one of the known ones."""
    text = str(exc)
    if site is None:
        return None
    for words, what, fix in _KNOWN:
        if words in text:
            return WrappedBeforeMoved.finding(
                f"{what}: the wrapper reads where the module is when it is made",
                site.location(),
                Fix(fix),
            )
    if "can't optimize a non-leaf Tensor" in text:
        return ParameterMovedAtCreation.finding(
            "the optimizer was given a tensor that is not a leaf: on a GPU, `.to()` of a "
            "tensor that requires grad (or of a Parameter) returns a copy computed from it",
            site.location(),
            Fix(
                "move first, then ask for gradients (`t.to(device).requires_grad_()`), or "
                "make it on the device: torch.randn(..., device=device, requires_grad=True)"
            ),
        )
    loading, prefixed = _LOADING_INTO.search(text), _PREFIXED.search(text)
    if loading is not None and prefixed is not None:
        into_wrapper = prefixed.group(1) == "Missing"
        return StateDictPrefixMismatch.finding(
            f"load_state_dict into {loading.group(1)} fails on the `module.` prefix: "
            + (
                "the wrapper's keys carry it and the checkpoint, saved from the bare model, "
                "does not"
                if into_wrapper
                else "the checkpoint was saved from a DataParallel/DDP wrapper and the model "
                "loading it is bare"
            ),
            site.location(),
            Fix(
                "load into `model.module` when the model is wrapped"
                if into_wrapper
                else "save `model.module.state_dict()`, or strip the prefix with "
                '`{k.removeprefix("module."): v for k, v in state.items()}`'
            ),
        )
    return None


# Words of torch's messages about devices, dtypes and mixed precision: an error that says none
# of them (a shape mismatch, a missing key) may fail on the CPU as well.
_DEVICE_WORDS = re.compile(
    r"cuda|device|half|bfloat16|float16|autocast|unscale|scaler|dtype|scalar type|"
    r"not implemented for|nccl",
    re.IGNORECASE,
)
_TORCH_DIR = os.path.dirname(os.path.abspath(str(torch.__file__))) + os.sep
# The observer's own frames call torch's ops: an error raised in C++ below them is torch's.
_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def failure_on_the_device(
    exc: BaseException, site: Site | None, found: list[Finding]
) -> Finding | None:
    """On a device, simulated or real, the program's final error as a finding (TP152) when
    torch raised it about devices, dtypes or mixed precision and no finding already stands
    at its line."""
    if site is None or not isinstance(exc, Exception) or isinstance(exc, StrictFindingError):
        return None
    if not _raised_by_torch(exc):
        return None
    if any(_same_line(f.location, site) for f in found):
        return None
    lines = str(exc).strip().splitlines()
    message = lines[0] if lines else ""
    if not _DEVICE_WORDS.search(message):
        return None
    return FailsOnTheDevice.finding(
        f"on the device the program stops here: {type(exc).__name__}: {message}",
        site.location(),
        Fix("the error names what the device needs; fix this line or the value it is given"),
        related=getattr(exc, "_torchport_related", ()),
    )


def _raised_by_torch(exc: BaseException) -> bool:
    """Whether the innermost frame of the traceback is torch's (or the simulation's own
    device error, which stands for torch's)."""
    if getattr(exc, "_torchport_simulated", False):
        return True
    frames = list(traceback.walk_tb(exc.__traceback__))
    if not frames:
        return False
    path = os.path.abspath(frames[-1][0].f_code.co_filename)
    return path.startswith((_TORCH_DIR, _RUNTIME_DIR))


def _same_line(where: Location | None, site: Site) -> bool:
    return (
        where is not None
        and where.line == site.line
        and os.path.basename(where.path) == os.path.basename(site.path)
    )
