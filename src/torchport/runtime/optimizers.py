"""Optimizers as they step: TP356, an eps that float16 parameters' moments cannot hold.

Adam and its relatives keep their moments in the parameters' dtype and divide by
``sqrt(v) + eps``. With float16 parameters a default ``eps=1e-8`` rounds to 0, so the first
gradient whose square underflows divides by zero. Only the GPU path of a program that picks
``torch.float16 if cuda else torch.float32`` does this, so only a run sees the dtype.

Each optimizer is checked at its first step (a pre-hook), against the groups it has then; the
finding is at the line that built it, found by wrapping ``Optimizer.__init__``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch.optim import optimizer as optim_hooks

from torchport.findings import Fix
from torchport.rules.optimizers import Float16OptimizerEpsilon
from torchport.runtime.patching import Patches
from torchport.runtime.sites import Site, user_site

if TYPE_CHECKING:
    from torchport.runtime.amp import AmpMonitor
    from torchport.runtime.observer import Observer

# Half the smallest float16 subnormal (2**-24): a number at or below it rounds to 0.
_ROUNDS_TO_ZERO = 2.0**-25


class OptimizerPrecision:
    """Wraps optimizer construction and watches each optimizer's first step."""

    def __init__(self, observer: Observer, amp: AmpMonitor) -> None:
        self._observer = observer
        self._amp = amp  # where modules were cast to float16
        self._built: weakref.WeakKeyDictionary[Any, Site] = weakref.WeakKeyDictionary()
        self._stepped: weakref.WeakSet[Any] = weakref.WeakSet()
        self._patches = Patches()
        self._hook: Any = None

    def install(self) -> None:
        self._patches.wrap(optim_hooks.Optimizer, "__init__", self._init)
        self._hook = optim_hooks.register_optimizer_step_pre_hook(self._step)

    def remove(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        self._patches.restore()

    def _init(self, original: Callable[..., None], optimizer: Any, *a: Any, **k: Any) -> None:
        original(optimizer, *a, **k)
        try:
            site = user_site(f"{type(optimizer).__name__}(...)")
            if site is not None:
                self._built.setdefault(optimizer, site)
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            self._observer.internal("noting an optimizer", internal)

    def _step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if optimizer in self._stepped:
            return
        self._stepped.add(optimizer)
        try:
            self._check(optimizer)
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            self._observer.internal("checking an optimizer's first step", internal)

    def _check(self, optimizer: Any) -> None:
        for group in optimizer.param_groups:
            eps = group.get("eps")
            if type(eps) is not float or eps > _ROUNDS_TO_ZERO:
                continue
            half = [
                p
                for p in group["params"]
                if p.grad is not None and p.dtype == torch.float16 and not p.grad.is_sparse
            ]
            if half:
                self._report(optimizer, eps, half[0])
                return

    def _made_at(self, parameter: torch.Tensor) -> Site | None:
        """Where the parameter's layer was built (in float16), or the tensor made."""
        built = self._observer.explainer.state_sites.built_at(parameter)
        return built if built is not None else self._observer.provenance.get(parameter)

    def _report(self, optimizer: Any, eps: float, parameter: torch.Tensor) -> None:
        kind = type(optimizer).__name__
        site = self._built.get(optimizer) or user_site("optimizer.step")
        made = self._amp.made_half_at(parameter, self._made_at(parameter), some=False)
        related = () if made is None or made == site else (made.location(),)
        self._observer.add(
            Float16OptimizerEpsilon.finding(
                f"{kind} steps float16 parameters with eps={eps:g}, which is 0 in float16: "
                "once a squared gradient underflows the update divides by zero and the "
                "weights turn inf/NaN",
                None if site is None else site.location(),
                Fix(
                    "keep the parameters in float32 and compute in float16 under "
                    "torch.autocast, or use bfloat16, or pass an eps float16 holds (1e-4)"
                ),
                related=related,
            ),
            site,
        )
