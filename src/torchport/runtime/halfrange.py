"""Values that float16 or bfloat16 cannot hold, seen where the program makes them.

- TP317: a Python number beyond float16's range written into a float16 tensor by an indexed
  write (`scores[i, eos] = float(2**30)`). `masked_fill(mask, -1e9)` and `fill_(1e9)` refuse
  such a number (torch raises; explained as TP353); the indexed write stores inf without a
  word, and the softmax after it turns the row into NaN.
- TP355: whole numbers (timesteps, positions) that a cast to bfloat16 or float16 rounds, and a
  `torch.arange` made in one of those dtypes past the whole numbers it holds exactly.
- TP351, under the simulation: the first op whose float16 result overflows (inf or NaN from
  finite inputs where the same op in float32 stays finite), as a variance of activations
  squared in float16 does.

Both happen only on the GPU path, where the tensors are in half precision, so `check` can only
guess at them; the run sees the dtype. Reading values waits for the GPU, so on a real CUDA
device TP355's evidence is computed there, a few small kernels per cast, and read once when the
watch ends (:class:`Deferred`); host tensors, and every tensor under the simulation, are read
at once. The float16 overflow watch re-runs ops in float32 and stays a simulation check.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from torchport.findings import Finding, Fix
from torchport.rules.dtype import Float16OverflowingConstant, IntegersRoundedInLowPrecision
from torchport.runtime import simtensor
from torchport.runtime.sites import Site, call_name, user_site

if TYPE_CHECKING:
    from torchport.runtime.observer import Handler, Observer

T = torch.Tensor
FLOAT16_MAX = 65504.0
# The largest N such that every whole number up to N is exact in the dtype.
EXACT_WHOLE = {torch.bfloat16: 256, torch.float16: 2048}
CASTS = {T.to, T.half, T.bfloat16, T.type, T.type_as}
_SMALL = 1 << 15  # timesteps, positions and id tables are small; activations are not read
_TABLE_COLUMNS = 16


def setitem_checked(observer: Observer, handler: Handler) -> Handler:
    """``handler`` for ``Tensor.__setitem__``, with the written number checked first."""

    def setitem(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            _check_written(observer, args)
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            observer.internal("checking an indexed write", internal)
        return handler(func, args, kwargs)

    return setitem


def cast_checked(observer: Observer, handler: Handler) -> Handler:
    """``handler`` for a cast, with whole numbers it rounds checked after it."""

    def cast(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        out = handler(func, args, kwargs)
        try:
            if isinstance(out, torch.Tensor) and out.dtype in EXACT_WHOLE and args:
                _check_cast(observer, func, args[0], out)
                _note_integers_cast(observer, func, args[0], out)
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            observer.internal("checking a cast", internal)
        return out

    return cast


class Deferred:
    """TP355's evidence about tensors on a real CUDA device, kept on the device per site (a
    flag and the largest number seen) and read once, when the watch ends: no sync per cast."""

    def __init__(self) -> None:
        self._sites: dict[tuple[str, int], tuple[Site, str, torch.Tensor, torch.Tensor]] = {}

    def note(self, site: Site, message: str, flag: torch.Tensor, top: torch.Tensor) -> None:
        """``message`` holds ``{top}``, filled in with the largest number seen at ``site``."""
        key = (site.path, site.line)
        known = self._sites.get(key)
        if known is not None:
            flag, top = flag | known[2], torch.maximum(top, known[3])
        self._sites[key] = (site, message, flag, top)

    def settle(self, observer: Observer) -> None:
        sites, self._sites = self._sites, {}
        for site, message, flag, top in sites.values():
            try:
                rounded, largest = bool(flag), float(top)
            except Exception as internal:  # noqa: BLE001 - a failed device is the program's
                observer.internal("reading TP355's evidence", internal)
                return
            if rounded:
                observer.add(_rounded(message.format(top=f"{largest:g}"), site), site)


def check_arange(observer: Observer, out: torch.Tensor) -> None:
    """A ``torch.arange`` in bfloat16/float16 longer than the whole numbers the dtype holds."""
    limit = EXACT_WHOLE.get(out.dtype)
    if limit is None or out.dim() != 1 or out.numel() <= limit + 1:
        return
    dtype = str(out.dtype).removeprefix("torch.")
    message = (
        f"torch.arange of {out.numel()} numbers in {dtype}: past {limit} neighbours round to "
        "the same number, so positions or steps collide"
    )
    if observer.sim is None and not out.is_cpu:
        if out.is_cuda:
            collide = (out[1:] == out[:-1]).any()
            site = user_site("torch.arange")
            if site is not None:
                observer.deferred.note(site, message, collide, out.abs().max().float())
        return
    values = simtensor.plain(out)
    if int(torch.unique(values).numel()) == values.numel():
        return  # a step that keeps them apart (the dtype holds every even number to 512)
    _report_rounded(observer, "torch.arange", message)


def _check_written(observer: Observer, args: tuple[Any, ...]) -> None:
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


def _check_cast(observer: Observer, func: Any, source: Any, out: torch.Tensor) -> None:
    if not isinstance(source, torch.Tensor) or source.dtype in EXACT_WHOLE:
        return
    if source.dtype == torch.bool or source.is_complex() or not 0 < source.numel() <= _SMALL:
        return
    limit = EXACT_WHOLE[out.dtype]
    if observer.sim is None and not source.is_cpu:
        if source.is_cuda and out.device == source.device:
            _defer_cast(observer, func, source, out, limit)
        return
    before = simtensor.plain(source)
    # the cast's rounding, computed on the host: `out` may be on a device already
    after = before.to(out.dtype) if observer.sim is None else simtensor.plain(out)
    if float(before.abs().max()) <= limit:
        return
    whole = _whole(before).expand_as(before)
    if not bool(whole.any()):
        return  # not whole numbers: rounding them is what half precision is for
    changed = (after.double() != before.double()) & whole
    if not bool(changed.any()):
        return
    worst = int(changed.nonzero()[0][0]) if before.dim() == 1 else None
    example = ""
    if worst is not None:
        example = f" ({before[worst].item():g} becomes {after[worst].item():g})"
    dtype = str(out.dtype).removeprefix("torch.")
    _report_rounded(
        observer,
        call_name(func),
        f"casting whole numbers up to {float(before.abs().max()):g} to {dtype} rounds "
        f"{int(changed.sum())} of {int(whole.sum())}{example}: {dtype} holds every whole number "
        f"only up to {limit}",
    )


def _whole(values: torch.Tensor) -> torch.Tensor:
    """Where ``values`` holds whole numbers, as a mask that broadcasts over it (computed
    without reading a value, so the device path needs no sync): all of it or none, or for a
    table of a few columns (ids beside ratings, read from one CSV) the columns of whole
    numbers."""
    if not values.is_floating_point():
        return torch.ones((), dtype=torch.bool, device=values.device)
    exact = values == values.round()
    if values.dim() == 2 and values.shape[1] <= _TABLE_COLUMNS:
        return exact.all(dim=0, keepdim=True)
    return exact.all()


def _defer_cast(
    observer: Observer, func: Any, source: torch.Tensor, out: torch.Tensor, limit: int
) -> None:
    """The cast check on the device: whole numbers past ``limit`` that the cast changed."""
    site = user_site(call_name(func))
    if site is None:
        return
    top = source.abs().max()
    changed = (out.double() != source.double()) & _whole(source)
    flag = (top > limit) & changed.any()
    dtype = str(out.dtype).removeprefix("torch.")
    message = (
        f"casting whole numbers up to {{top}} to {dtype} rounds some of them: {dtype} holds "
        f"every whole number only up to {limit}"
    )
    observer.deferred.note(site, message, flag, top.double())


def _note_integers_cast(observer: Observer, func: Any, source: Any, out: torch.Tensor) -> None:
    """Integers (labels, indices) cast to half precision: where, so that the loss or lookup
    that then refuses them names the line (a batch mover that casts every tensor)."""
    if isinstance(source, torch.Tensor) and not source.is_floating_point():
        site = user_site(call_name(func))
        if site is not None:
            observer.provenance.record(out, site)


def _report_rounded(observer: Observer, name: str, message: str) -> None:
    site = user_site(name)
    observer.add(_rounded(message, site), site)


def _rounded(message: str, site: Site | None) -> Finding:
    return IntegersRoundedInLowPrecision.finding(
        message,
        None if site is None else site.location(),
        Fix("keep timesteps and positions in float32 (cast what is computed from them)"),
    )


def check_overflow(
    observer: Observer, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
) -> None:
    """TP351 for the first float16 result that overflows (simulation only: reads values)."""
    try:
        if bool(torch.isfinite(simtensor.plain(out)).all()) or not _finite_inputs(args, kwargs):
            return
        widened = func(*_widened(args), **{k: _widened(v) for k, v in kwargs.items()})
        if not isinstance(widened, torch.Tensor) or not bool(torch.isfinite(widened).all()):
            return  # inf in float32 too: what the program computes, not a float16 overflow
    except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
        observer.internal("checking a float16 result", internal)
        return
    observer.watch_overflow = False  # the first overflow is the cause; the rest follow it
    observer.report_non_finite(
        func,
        "overflows float16 (inf/NaN from finite inputs; the same op in float32 stays finite): "
        "on the GPU path, where it runs in float16",
        "compute this op in float32 (`.float()`, cast back after), or scale it down",
        "float16",
    )


def _finite_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """No inf/NaN comes in: neither a tensor nor a number (``masked_fill(m, -inf)``)."""
    for value in (*args, *kwargs.values()):
        items = value if isinstance(value, list | tuple) else (value,)
        for item in items:
            if isinstance(item, torch.Tensor) and item.is_floating_point():
                if not bool(torch.isfinite(simtensor.plain(item)).all()):
                    return False
            elif isinstance(item, float) and not math.isfinite(item):
                return False
    return True


def _widened(value: Any) -> Any:
    """``value`` with float16 tensors as float32 host copies (for the float32 reference)."""
    if isinstance(value, torch.Tensor):
        data = simtensor.plain(value)
        return data.float() if data.dtype == torch.float16 else data
    if isinstance(value, list | tuple):
        return type(value)(_widened(v) for v in value)
    return value
