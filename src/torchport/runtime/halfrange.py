"""A Python number beyond float16's range written into a float16 tensor (TP317 at run time).

`masked_fill(mask, -1e9)` and `fill_(1e9)` refuse such a number (torch raises; the error is
explained as TP353), but an indexed write (`scores[i, eos] = float(2**30)`) stores inf without
a word, and the softmax after it turns the row into NaN. Only on the GPU path, where the
tensor is float16, so `check` can only guess at it; the run sees the dtype.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from torchport.findings import Fix
from torchport.rules.dtype import Float16OverflowingConstant
from torchport.runtime.sites import user_site

if TYPE_CHECKING:
    from torchport.runtime.observer import Handler, Observer

FLOAT16_MAX = 65504.0


def checked(observer: Observer, handler: Handler) -> Handler:
    """``handler`` for ``Tensor.__setitem__``, with the written number checked first."""

    def setitem(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            _check(observer, args)
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            observer.internal("checking an indexed write", internal)
        return handler(func, args, kwargs)

    return setitem


def _check(observer: Observer, args: tuple[Any, ...]) -> None:
    if len(args) < 3 or type(args[2]) not in (int, float):
        return
    tensor, value = args[0], args[2]
    if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.float16:
        return
    if not math.isfinite(value) or abs(value) <= FLOAT16_MAX:
        return
    site = user_site("__setitem__")
    end = "min" if value < 0 else "max"
    finding = Float16OverflowingConstant.finding(
        f"{value:g} written into a float16 tensor becomes {'-' if value < 0 else ''}inf "
        "(float16 holds at most ±65504): a softmax or sum over it turns into NaN",
        None if site is None else site.location(),
        Fix(f"write torch.finfo(tensor.dtype).{end} instead"),
    )
    observer.add(finding, site)
