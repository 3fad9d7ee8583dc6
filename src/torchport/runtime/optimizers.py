"""Optimizers as they step: TP356, an eps that float16 parameters' moments cannot hold.

Adam and its relatives keep their moments in the parameters' dtype and divide by
``sqrt(v) + eps``. With float16 parameters a default ``eps=1e-8`` rounds to 0, so the first
gradient whose square underflows divides by zero. Only the GPU path of a program that picks
``torch.float16 if cuda else torch.float32`` does this, so only a run sees the dtype.

Each optimizer is checked at its first step (a pre-hook), against the groups it has then; the
finding is at the line that built it, found by wrapping ``Optimizer.__init__``.

The same wrapping notes where each optimizer's state was loaded: ``load_state_dict`` puts the
state on its parameters' device of that moment, so state loaded before the model moves stays
on the CPU, and the step's device error (TP150) then names the loading line.
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


class OptimizerSites:
    """The user's lines that built each optimizer and loaded its state: a device error in a
    step whose state tensor stayed on the CPU (state loaded before the model moved) names the
    ``load_state_dict`` line, and TP356 the line that built the optimizer."""

    def __init__(self) -> None:
        self._built: weakref.WeakKeyDictionary[Any, Site] = weakref.WeakKeyDictionary()
        self._loaded: weakref.WeakKeyDictionary[Any, Site] = weakref.WeakKeyDictionary()
        self._patches = Patches()
        self.on_internal_error: Callable[[str, BaseException], None] = lambda what, exc: None

    def install(self) -> None:
        self._patches.wrap(optim_hooks.Optimizer, "__init__", self._init)
        self._patches.wrap(optim_hooks.Optimizer, "load_state_dict", self._load)

    def remove(self) -> None:
        self._patches.restore()

    def built_at(self, optimizer: Any) -> Site | None:
        return self._built.get(optimizer)

    def loaded_at(self, tensor: torch.Tensor) -> Site | None:
        """Where the state holding ``tensor`` (Adam's ``exp_avg``...) was loaded."""
        for optimizer, site in list(self._loaded.items()):
            for state in optimizer.state.values():
                if any(value is tensor for value in state.values()):
                    return site
        return None

    def _init(self, original: Callable[..., None], optimizer: Any, *a: Any, **k: Any) -> None:
        original(optimizer, *a, **k)
        self._note(self._built, optimizer, f"{type(optimizer).__name__}(...)")

    def _load(self, original: Callable[..., None], optimizer: Any, *a: Any, **k: Any) -> None:
        original(optimizer, *a, **k)
        self._note(self._loaded, optimizer, "optimizer.load_state_dict")

    def _note(self, sites: weakref.WeakKeyDictionary[Any, Site], optimizer: Any, call: str) -> None:
        try:
            site = user_site(call)
            if site is not None:
                sites.setdefault(optimizer, site)
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            self.on_internal_error("noting an optimizer", internal)


class OptimizerPrecision:
    """Watches each optimizer's first step (a global step pre-hook)."""

    def __init__(self, observer: Observer, amp: AmpMonitor) -> None:
        self._observer = observer
        self._amp = amp  # where modules were cast to float16
        self._stepped: weakref.WeakSet[Any] = weakref.WeakSet()
        self._hook: Any = None

    def install(self) -> None:
        self._hook = optim_hooks.register_optimizer_step_pre_hook(self._step)

    def remove(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

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
        built = self._observer.explainer.optimizer_sites.built_at(optimizer)
        site = built or user_site("optimizer.step")
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
