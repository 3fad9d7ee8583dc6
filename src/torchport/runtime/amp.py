"""Mixed precision as it runs: GradScaler, autocast, backward and the optimizer steps between.

``check`` sees these mistakes where one function writes the whole step; ``run`` sees them
wherever the code is (a helper, a trainer class, a callback), because it watches the calls:

- TP305: a deprecated ``torch.cuda.amp``/``torch.cpu.amp`` autocast or GradScaler is made;
- TP306: a scaler unscales float16 gradients (a ``.half()`` model), which torch refuses;
- TP307: ``backward()`` runs while autocast is on;
- TP308: an enabled scaler scales a loss computed under bfloat16 autocast;
- TP309: ``optimizer.step()`` is called directly after a scaled backward;
- TP310: ``scaler.step()`` runs twice with no ``scaler.update()`` between;
- TP311: gradients are clipped after a scaled backward and before ``unscale_``;
- TP312: a loss computed under float16 autocast is backpropagated with no scaler;
- TP314: ``scaler.scale(loss)`` whose result never reaches ``backward()``;
- TP354: ``scaler.unscale_(optimizer)`` a second time with no ``scaler.update()`` between.

Only enabled scalers count: a scaler made with ``enabled=False`` (AMP off on this machine) passes
everything through, and so does this module. Each check runs before the call it watches, so a
finding is recorded even where torch then raises (TP306, TP310). Bookkeeping never fails the
program: its errors are recorded as torchport's own.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.amp import autocast_mode, grad_scaler
from torch.nn.utils import clip_grad
from torch.optim import optimizer as optim_hooks

from torchport.findings import Fix, Location
from torchport.rules import Rule
from torchport.rules.amp import (
    ClipWithoutUnscale,
    Float16AutocastWithoutScaler,
    ScaledLossDiscarded,
    ScalerUpdatedBetweenSteps,
    UnscaleTwiceBeforeUpdate,
)
from torchport.rules.dtype import (
    BackwardInsideAutocast,
    DeprecatedAmpApi,
    GradScalerWithBfloat16,
    GradScalerWithoutUpdate,
    HalfModelWithGradScaler,
    OptimizerStepBypassesScaler,
)
from torchport.runtime.patching import Patches
from torchport.runtime.sites import Site, user_caller, user_site

if TYPE_CHECKING:
    from torchport.runtime.observer import Observer

_DEPRECATED_MODULES = ("torch.cuda.amp", "torch.cpu.amp")
_AUTOCAST_DEVICES = ("cuda", "cpu", "mps")
# How far backward() looks through the loss's graph for a scaled output: the scaled loss is
# usually the tensor itself or a sum of a few; a miss only costs a TP314 that is not reported.
_GRAPH_NODES = 256


@dataclass
class _Scaled:
    """One ``scaler.scale(x)`` output and whether a backward reached it."""

    site: Site | None
    output: weakref.ref[torch.Tensor]
    used: bool = False


@dataclass
class _ScalerState:
    """What one GradScaler did since its last ``update()``."""

    scaled: list[_Scaled] = field(default_factory=list)
    backward_scaled: bool = False
    unscaled: bool = False
    stepped: set[int] = field(default_factory=set)  # id() of the optimizers it stepped
    unscaled_for: set[int] = field(default_factory=set)  # id() of the optimizers unscaled
    updated_at: Site | None = None  # the update() that began this state, if one did


class AmpMonitor:
    """Patches the AMP entry points for the length of a watch (see the module doc)."""

    def __init__(self, observer: Observer) -> None:
        self._observer = observer
        self._scalers: weakref.WeakKeyDictionary[Any, _ScalerState] = weakref.WeakKeyDictionary()
        # Enabled autocast regions entered with grad on since the last backward or optimizer
        # step, by site (a loop enters the same region each step).
        self._regions: dict[Site | None, tuple[torch.dtype, Site | None]] = {}
        # where each autocast object was made (`ctx = torch.autocast(...)` before the loop)
        self._made: weakref.WeakKeyDictionary[Any, Site] = weakref.WeakKeyDictionary()
        self._scaler_made: weakref.WeakKeyDictionary[Any, Site] = weakref.WeakKeyDictionary()
        # No check runs on backward, clipping or optimizer steps until the program has entered
        # an autocast region or made an enabled scaler: an fp32 loop pays two attribute reads.
        self._amp_seen = False
        self._local = threading.local()
        self._patches = Patches()
        self._hook: Any = None
        self._open: list[Site | None] = []  # the autocast regions entered and not yet left
        # modules cast to float16 (`model.half()`, `.to(torch.float16)`) -> the user's line
        self._half_casts: weakref.WeakKeyDictionary[nn.Module, tuple[Site, frozenset[int]]] = (
            weakref.WeakKeyDictionary()
        )

    # --- install / remove --------------------------------------------------------------------
    def install(self) -> None:
        scaler = grad_scaler.GradScaler
        self._patches.wrap(scaler, "__init__", self._scaler_init)
        self._patches.wrap(scaler, "scale", self._scale)
        self._patches.wrap(scaler, "unscale_", self._unscale)
        self._patches.wrap(scaler, "step", self._scaler_step)
        self._patches.wrap(scaler, "update", self._update)
        self._patches.wrap(autocast_mode.autocast, "__init__", self._autocast_init)
        self._patches.wrap(autocast_mode.autocast, "__enter__", self._autocast_enter)
        self._patches.wrap(autocast_mode.autocast, "__exit__", self._autocast_exit)
        self._patches.wrap(torch.autograd, "backward", self._backward)
        for name in ("clip_grad_norm_", "clip_grad_value_"):
            self._patches.wrap(torch.nn.utils, name, self._clip)
            self._patches.wrap(clip_grad, name, self._clip)
        self._hook = optim_hooks.register_optimizer_step_pre_hook(self._optimizer_step)
        self._patches.wrap(nn.Module, "half", self._module_half)
        self._patches.wrap(nn.Module, "to", self._module_to)

    def remove(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        self._patches.restore()

    # --- bookkeeping around the program's calls ------------------------------------------------
    def _guarded(self, what: str, check: Callable[[], None]) -> None:
        try:
            check()
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            self._observer.internal(what, internal)

    def _report(
        self,
        rule: type[Rule],
        message: str,
        site: Site | None,
        fix: str,
        related: tuple[Site | None, ...] = (),
    ) -> None:
        location = None if site is None else site.location()
        # a step helper of the user's (`self._clip()` in the loop): the line that called it
        caller = user_caller() if site is not None else None
        places = {s.location() for s in (caller, *related) if s is not None and s != site}
        self._observer.add(
            rule.finding(
                message,
                location,
                Fix(fix),
                related=tuple(sorted(places, key=lambda loc: (loc.path, loc.line))),
            ),
            site,
        )

    def _state(self, scaler: Any) -> _ScalerState | None:
        """The scaler's state, or None when it is disabled (it then passes everything through)."""
        if not scaler.is_enabled():
            return None
        state = self._scalers.get(scaler)
        if state is None:
            state = self._scalers[scaler] = _ScalerState()
            self._amp_seen = True
        return state

    @property
    def _in_scaler_step(self) -> bool:
        return bool(getattr(self._local, "scaler_step", False))

    # --- GradScaler -----------------------------------------------------------------------------
    def _scaler_init(self, original: Callable[..., None], scaler: Any, *a: Any, **k: Any) -> None:
        original(scaler, *a, **k)
        self._guarded("noting a GradScaler", lambda: self._note_scaler(scaler))

    def _note_scaler(self, scaler: Any) -> None:
        self._deprecated(scaler, "GradScaler")
        site = user_site("GradScaler")
        if site is not None:
            self._scaler_made[scaler] = site

    def _deprecated(self, obj: Any, kind: str) -> None:
        module = type(obj).__module__
        if not module.startswith(_DEPRECATED_MODULES):
            return
        device = module.split(".")[1]
        old = f"torch.{device}.amp.{kind}"
        new = f'torch.amp.{kind}("{device}", ...)'
        if kind == "autocast":
            new = f'torch.autocast(device_type="{device}", ...)'
        self._report(
            DeprecatedAmpApi,
            f"{old} is deprecated (a FutureWarning since torch 2.4)",
            user_site(old),
            f"use {new}",
        )

    def _scale(self, original: Callable[..., Any], scaler: Any, outputs: Any) -> Any:
        scaled = original(scaler, outputs)
        self._guarded("noting scaler.scale", lambda: self._note_scale(scaler, scaled))
        return scaled

    def _note_scale(self, scaler: Any, scaled: Any) -> None:
        state = self._state(scaler)
        if state is None:
            return
        for site, (dtype, made) in self._regions.items():
            if dtype == torch.bfloat16:
                self._report(
                    GradScalerWithBfloat16,
                    "an enabled GradScaler scales a loss computed under bfloat16 autocast: "
                    "bfloat16 has float32's range, so loss scaling only costs a sync per step",
                    site,
                    "drop the GradScaler (call loss.backward() and optimizer.step()), or "
                    "create it with enabled=False for bfloat16",
                    related=(made, self._scaler_made.get(scaler)),
                )
        site = user_site("scaler.scale")
        for tensor in _tensors(scaled):
            state.scaled.append(_Scaled(site, weakref.ref(tensor)))

    def _unscale(self, original: Callable[..., None], scaler: Any, optimizer: Any) -> None:
        self._guarded("checking scaler.unscale_", lambda: self._check_unscale(scaler, optimizer))
        original(scaler, optimizer)

    def _module_half(self, original: Callable[..., Any], module: nn.Module) -> Any:
        self._guarded("noting a float16 cast", lambda: self._note_half(module, "model.half()"))
        return original(module)

    def _module_to(
        self, original: Callable[..., Any], module: nn.Module, *args: Any, **kwargs: Any
    ) -> Any:
        if torch.float16 in args or kwargs.get("dtype") is torch.float16:
            self._guarded("noting a float16 cast", lambda: self._note_half(module, "model.to"))
        return original(module, *args, **kwargs)

    def _note_half(self, module: nn.Module, call: str) -> None:
        site = user_site(call)
        if site is not None:
            # the parameters it held then, by id: layers added later were not cast here (and
            # a weak reference to a parameter would break the simulated Module.to)
            self._half_casts[module] = (site, frozenset(id(p) for p in module.parameters()))

    def made_half_at(self, parameter: torch.Tensor, built: Site | None, some: bool) -> Site | None:
        """Where ``parameter`` became float16: the cast of a module that held it then, or
        else (or when only some layers are float16) where its layer was built."""
        if not some:
            for site, held in list(self._half_casts.values()):
                if id(parameter) in held:
                    return site
        return built

    def _check_unscale(self, scaler: Any, optimizer: Any) -> None:
        state = self._state(scaler)
        if state is None:
            return
        state.unscaled = True
        if id(optimizer) in state.unscaled_for:
            self._report(
                UnscaleTwiceBeforeUpdate,
                "scaler.unscale_() runs again for this optimizer with no scaler.update() since "
                "the last one (torch raises here): unscale once per step, just before "
                "clipping, and update after every unscale, also on a skipped step",
                user_site("scaler.unscale_"),
                "move unscale_ next to scaler.step(); call scaler.update() before any "
                "continue/return that skips the step",
            )
        state.unscaled_for.add(id(optimizer))
        trained = [p for p in _parameters(optimizer) if p.grad is not None]
        half = [p for p in trained if p.grad is not None and p.grad.dtype == torch.float16]
        if half:
            # some layers built in float16 (nn.PReLU(c, dtype=...)): where the first was built
            built = self._observer.explainer.state_sites.built_at(half[0])
            made = built is not None and len(half) < len(trained)
            site = user_site("scaler.unscale_")
            self._observer.add(
                HalfModelWithGradScaler.finding(
                    "the scaler unscales float16 gradients: "
                    + (
                        f"{len(half)} of {len(trained)} parameters are float16, the first of "
                        f"a layer built at {built}"
                        if made
                        else "the trained parameters are float16 (a .half() model, or layers "
                        "made in float16)"
                    )
                    + ", which GradScaler cannot unscale",
                    None if site is None else site.location(),
                    Fix("keep the model in float32 and let torch.autocast compute in float16"),
                    related=_locations(self.made_half_at(half[0], built, made)),
                ),
                site,
            )

    def _scaler_step(
        self, original: Callable[..., Any], scaler: Any, optimizer: Any, *a: Any, **k: Any
    ) -> Any:
        self._guarded("checking scaler.step", lambda: self._check_step(scaler, optimizer))
        self._local.scaler_step = True
        try:
            return original(scaler, optimizer, *a, **k)
        finally:
            self._local.scaler_step = False

    def _check_step(self, scaler: Any, optimizer: Any) -> None:
        state = self._state(scaler)
        if state is None:
            return
        site = user_site("scaler.step")
        if state.updated_at is not None and not (state.scaled or state.backward_scaled):
            # no scaled backward since the update: these gradients were made with the scale
            # the update just replaced
            self._report(
                ScalerUpdatedBetweenSteps,
                f"scaler.step() after scaler.update() (line {state.updated_at.line}) with no "
                "scaled backward between them: this optimizer's gradients were scaled with the "
                "loss scale that update() replaced, so they are unscaled wrongly",
                site,
                "call scaler.update() once per iteration, after every optimizer's scaler.step()",
                related=(state.updated_at,),
            )
        if id(optimizer) in state.stepped:
            self._report(
                GradScalerWithoutUpdate,
                "scaler.step() runs again for this optimizer with no scaler.update() since "
                "the last one: the loss scale never adapts (on CUDA torch raises here)",
                site,
                "call scaler.update() once per iteration, after the scaler.step() calls",
            )
        state.stepped.add(id(optimizer))
        for entry in state.scaled:
            if not entry.used and not state.backward_scaled:
                self._report(
                    ScaledLossDiscarded,
                    "the result of scaler.scale(loss) never reached backward(): the gradients "
                    "are not scaled, so float16 gradients can underflow to zero",
                    entry.site,
                    "call backward() on the scaled loss: scaler.scale(loss).backward()",
                )
        state.scaled.clear()  # judged; keeps the list short where update() is never called

    def _update(self, original: Callable[..., None], scaler: Any, *a: Any, **k: Any) -> None:
        original(scaler, *a, **k)
        if scaler in self._scalers:
            self._scalers[scaler] = _ScalerState(updated_at=user_site("scaler.update"))

    # --- autocast, backward, clipping, optimizer steps -----------------------------------------
    def _autocast_init(self, original: Callable[..., None], region: Any, *a: Any, **k: Any) -> None:
        original(region, *a, **k)
        self._guarded("noting an autocast", lambda: self._note_made(region))

    def _note_made(self, region: Any) -> None:
        site = user_site("torch.autocast")
        if site is not None:
            self._made[region] = site

    def _autocast_enter(self, original: Callable[..., Any], region: Any) -> Any:
        entered = original(region)
        self._guarded("noting an autocast region", lambda: self._note_region(region))
        self._open.append(user_site("torch.autocast"))
        return entered

    def _autocast_exit(self, original: Callable[..., Any], region: Any, *exc: Any) -> Any:
        if self._open:
            self._open.pop()
        return original(region, *exc)

    def _note_region(self, region: Any) -> None:
        self._deprecated(region, "autocast")
        enabled = bool(getattr(region, "_enabled", False))
        self._amp_seen = self._amp_seen or enabled
        dtype = getattr(region, "fast_dtype", None)
        if enabled and torch.is_grad_enabled() and isinstance(dtype, torch.dtype):
            self._regions[user_site("torch.autocast")] = (dtype, self._made.get(region))

    def _backward(self, original: Callable[..., None], tensors: Any, *a: Any, **k: Any) -> None:
        if self._amp_seen:
            self._guarded("checking backward", lambda: self._check_backward(tensors))
        original(tensors, *a, **k)

    def _check_backward(self, tensors: Any) -> None:
        if any(torch.is_autocast_enabled(kind) for kind in _AUTOCAST_DEVICES):
            opened = self._open[-1] if self._open else None
            self._report(
                BackwardInsideAutocast,
                "backward() runs inside an autocast region"
                + (f" (entered at line {opened.line})" if opened is not None else "")
                + ": its ops would run in the precision autocast picked for the forward pass",
                user_site("backward"),
                "leave the `with torch.autocast(...)` block before calling backward()",
                related=(opened,),
            )
        roots = [t for t in _tensors(tensors) if t.grad_fn is not None]
        scaled = self._mark_scaled(roots)
        if not scaled and not any(s.scaled or s.backward_scaled for s in self._live_states()):
            self._check_unscaled_float16()
        self._regions.clear()

    def _live_states(self) -> list[_ScalerState]:
        return list(self._scalers.values())

    def _mark_scaled(self, roots: list[torch.Tensor]) -> bool:
        """Mark the scaled outputs this backward reaches; True when it reaches one."""
        reached = False
        for state in self._live_states():
            for entry in state.scaled:
                output = entry.output()
                if output is not None and any(_reaches(root, output) for root in roots):
                    entry.used = state.backward_scaled = reached = True
        return reached

    def _check_unscaled_float16(self) -> None:
        for site, (dtype, made) in self._regions.items():
            if dtype == torch.float16:
                self._report(
                    Float16AutocastWithoutScaler,
                    "a loss computed under float16 autocast is backpropagated without a "
                    "GradScaler: small gradients underflow to zero in float16",
                    site,
                    'scale the loss: scaler = torch.amp.GradScaler("cuda"); '
                    "scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update() "
                    "(or autocast to bfloat16, which needs no scaler)",
                    related=(made,),
                )

    def _clip(self, original: Callable[..., Any], *a: Any, **k: Any) -> Any:
        if self._amp_seen:
            self._guarded("checking gradient clipping", self._check_clip)
        return original(*a, **k)

    def _check_clip(self) -> None:
        if any(s.backward_scaled and not s.unscaled for s in self._live_states()):
            self._report(
                ClipWithoutUnscale,
                "gradients are clipped while still multiplied by the loss scale: the "
                "threshold then applies to scaled gradients",
                user_site("clip_grad"),
                "call scaler.unscale_(optimizer) before clipping",
            )

    def _optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._amp_seen:
            self._guarded("checking optimizer.step", lambda: self._check_optimizer_step(optimizer))

    def _check_optimizer_step(self, optimizer: Any) -> None:
        self._regions.clear()
        if self._in_scaler_step:
            return
        if any(s.backward_scaled and id(optimizer) not in s.stepped for s in self._live_states()):
            self._report(
                OptimizerStepBypassesScaler,
                "optimizer.step() is called directly after a scaled backward: the "
                "gradients are still multiplied by the loss scale, and inf/NaN steps are "
                "not skipped",
                user_site("optimizer.step"),
                "call scaler.step(optimizer) instead, then scaler.update()",
            )


def _locations(site: Site | None) -> tuple[Location, ...]:
    return () if site is None else (site.location(),)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    """The tensors of a backward or scale argument: a tensor, or a list or tuple of them."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, torch.Tensor):
                yield item


def _parameters(optimizer: Any) -> Iterator[torch.Tensor]:
    for group in getattr(optimizer, "param_groups", []):
        yield from group.get("params", [])


def _reaches(root: torch.Tensor, target: torch.Tensor) -> bool:
    """Whether ``root`` is ``target`` or its graph (searched up to a bound) contains it."""
    if root is target:
        return True
    wanted = target.grad_fn
    if wanted is None:
        return False
    seen, frontier = 0, [root.grad_fn]
    while frontier and seen < _GRAPH_NODES:
        node = frontier.pop()
        if node is None:
            continue
        if node is wanted:
            return True
        seen += 1
        frontier.extend(next_node for next_node, _ in node.next_functions)
    return False
