"""Loss targets of the wrong dtype (TP304), seen at the loss call before torch reports them.

torch's own errors name no line of the user's and no cause ("expected target dtype to be Long or
Byte, but got Float", "result type Float can't be cast to the desired output type Long"), and
some combinations do not fail at all until backward. The observer sees the functional loss that
every loss module calls, so the check is made there, once per loss line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from torchport.findings import Fix
from torchport.rules.dtype import LossTargetWrongDtype
from torchport.runtime.sites import call_name, user_site

if TYPE_CHECKING:
    from torchport.runtime.observer import Handler, Observer

# Losses whose target holds class indices (unless, for cross_entropy, it has the input's shape:
# class probabilities), and losses whose target is a floating-point value per element.
_CLASS_INDEX = {F.cross_entropy, F.nll_loss, F.multi_margin_loss}
_FLOAT_TARGET = {
    F.binary_cross_entropy, F.binary_cross_entropy_with_logits, F.mse_loss, F.l1_loss,
    F.smooth_l1_loss, F.huber_loss, F.soft_margin_loss, F.kl_div,
}  # fmt: skip
_INDEX_DTYPES = (torch.int64, torch.uint8)
LOSSES = _CLASS_INDEX | _FLOAT_TARGET


def checked(observer: Observer, func: Any, handler: Handler) -> Handler:
    """``handler`` for the loss ``func``, with its target's dtype checked first."""

    def loss(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            _check(observer, func, args, kwargs)
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            observer.internal("checking a loss target", internal)
        return handler(func, args, kwargs)

    return loss


def _check(observer: Observer, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    given = args[0] if args else kwargs.get("input")
    target = args[1] if len(args) > 1 else kwargs.get("target")
    if not isinstance(given, torch.Tensor) or not isinstance(target, torch.Tensor):
        return
    problem = _problem(func, given, target)
    if problem is None:
        return
    name = call_name(func).rsplit(".", 1)[-1]
    site = user_site(name)
    dtype = str(target.dtype).replace("torch.", "")
    made = observer.provenance.get(target)  # a cast of integer labels, where it was made
    if made == site:
        made = None
    finding = LossTargetWrongDtype.finding(
        f"{name} got a target of dtype {dtype} and shape {tuple(target.shape)}: {problem[0]}"
        + (f" (it was made at {made} by {made.call})" if made is not None else ""),
        None if site is None else site.location(),
        Fix(problem[1]),
        related=(made.location(),) if made is not None else (),
    )
    observer.add(finding, site)


def _problem(func: Any, given: torch.Tensor, target: torch.Tensor) -> tuple[str, str] | None:
    """What is wrong with ``target`` for ``func``, and the fix; None when nothing is."""
    if func in _CLASS_INDEX:
        probabilities = func is F.cross_entropy and target.shape == given.shape
        if probabilities or target.dtype in _INDEX_DTYPES:
            return None
        return (
            "class-index targets must be int64",
            "convert the labels with .long() where they are made (or load them as int64)",
        )
    if target.is_floating_point():
        return None
    return (
        "this loss needs a floating-point target",
        "convert the target with .float() (or .to(logits.dtype))",
    )
