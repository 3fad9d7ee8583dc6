"""Steady state: after a loop's first steps, most steps run without the function mode.

The function mode costs a few microseconds on every torch call, even one it lets through, and on
a GPU that is what a small model's loop pays (its kernels are asynchronous). So each call of a
model is a step, keyed by the line that calls the model, ``training`` and grad mode: a key's
first ``WARM_CALLS`` steps are observed fully, then one in ``SAMPLE_EVERY``, drawn at random
(a fixed seed: the same run is sampled the same way) so that no periodic event of the loop's
can keep falling between the observed steps. In the steps
between, the mode is off and only what can change is watched, by patching the entry points
(restored when the mode is back): syncs, copies, ``torch.tensor`` of device tensors and
``backward`` (the step counter) go through the observer's own handlers, so the sync and copy
inventories stay exact. Anything new there (a sync or copy site, a finding, a non-blocking copy
to check) and a model call from a new line, in another mode or after an error bring the mode
back and start the warm-up again. Forward hooks (input dtypes) and loader timing never stop.

What is sampled: the op counts by device (and the CPU ops' sites), which the report says. Never
sampled: under ``--simulate`` (only the mode can make the simulated device), with
``check_finite``, in threads other than the one that entered, and while the program has a
function mode of its own on top.
"""

from __future__ import annotations

import random
import sys
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks

from torchport.runtime.failure import StrictFindingError
from torchport.runtime.sites import user_frame

if TYPE_CHECKING:
    from torchport.runtime.observer import Handler, Observer

WARM_CALLS = 32
SAMPLE_EVERY = 16
T = torch.Tensor
_SYNC_METHODS = (
    "item", "tolist", "__bool__", "__int__", "__float__", "__format__", "__repr__", "nonzero",
    "numpy", "__array__",
)  # fmt: skip
_TRANSFER_METHODS = ("to", "cuda", "cpu", "copy_", "backward")
_FROM_DATA_FUNCTIONS = ("tensor", "as_tensor", "asarray")
_MISSING = object()


class SteadyState:
    """Switches the observer's function mode off and on at the calls of the program's models."""

    def __init__(self, observer: Observer) -> None:
        self.o = observer
        options = observer.options
        self.enabled = options.steady_state and observer.sim is None and not options.check_finite
        self._draw = random.Random(20261112).random
        self.paused = False
        self._calls: weakref.WeakKeyDictionary[nn.Module, dict[tuple[Any, ...], int]] = (
            weakref.WeakKeyDictionary()
        )
        self._thread = threading.get_ident()
        self._depth = 0
        self._handles: list[Any] = []
        self.installed = False
        self._saved: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        self.installed = True
        if not self.enabled:
            return
        self._thread = threading.get_ident()
        self._handles = [
            module_hooks.register_module_forward_pre_hook(self._on_call),
            module_hooks.register_module_forward_hook(self._on_return, always_call=True),
        ]

    def remove(self) -> None:
        """Stop deciding at model calls (the mode's state is left as it is)."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    # --- decisions, at each call of a model ---------------------------------------------------
    def _on_call(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        stack = self.o.tracker.stack
        if len(stack) != 1 or stack[0] is not module or threading.get_ident() != self._thread:
            return  # not a model's own call: a layer inside it, a loader's transform, a thread
        try:
            if self._observe_this_call(module):
                self.resume()
            else:
                self.pause()
        except Exception as internal:  # noqa: BLE001 - a hook never fails the user's module
            self.o.internal("sampling steady-state steps", internal)
            self.enabled = False
            self.resume()

    def _observe_this_call(self, module: nn.Module) -> bool:
        frame = user_frame(4)
        line = None if frame is None else (frame.f_code.co_filename, frame.f_lineno)
        key = (line, module.training, torch.is_grad_enabled())
        counts = self._calls.get(module)
        if counts is None:
            counts = self._calls[module] = {}
        seen = counts[key] = counts.get(key, 0) + 1
        record = self.o.record
        record.model_calls += 1
        observe = seen <= WARM_CALLS or self._draw() * SAMPLE_EVERY < 1 or self.o.has_pending
        if not observe:
            record.model_calls_unobserved += 1
        return observe

    def _on_return(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        # Called also when the forward raised (always_call): the error was not explained if
        # the mode was off, so watch everything from here on, afresh.
        if self.paused and sys.exc_info()[0] is not None:
            self.changed()

    def changed(self) -> None:
        """Something new happened: observe fully again, and warm every model up again."""
        self._calls = weakref.WeakKeyDictionary()
        self.resume()

    # --- the mode off and on --------------------------------------------------------------------
    def pause(self) -> None:
        if self.paused or not self.enabled:
            return
        if torch.overrides._get_current_function_mode() is not self.o:  # type: ignore[no-untyped-call]
            return  # the program's own mode is on top: popping would take it off instead
        torch._C._pop_torch_function_stack()
        self._depth = torch._C._len_torch_function_stack()
        self.paused = True
        self._patch()

    def resume(self) -> None:
        """The mode back on, unless the program pushed a mode of its own meanwhile."""
        if not self.paused or torch._C._len_torch_function_stack() != self._depth:
            return
        self._unpatch()
        self.paused = False
        torch._C._push_on_torch_function_stack(self.o)

    def close(self) -> None:
        """At the watch's end: the mode is off and not to be pushed again."""
        self.remove()
        if self.paused:
            self._unpatch()
            self.paused = False

    # --- probes: the entry points watched while the mode is off ---------------------------------
    def _patch(self) -> None:
        o = self.o
        for name in _SYNC_METHODS:
            self._replace(T, name, o._sync)
        for name in _TRANSFER_METHODS:
            handler = o.transfers.handler_for(getattr(T, name))
            if handler is not None:
                self._replace(T, name, handler)
        self._replace(torch, "nonzero", o._sync)
        for name in _FROM_DATA_FUNCTIONS:
            self._replace(torch, name, o._factory)
        self._replace(T, "new_tensor", o._factory)

    def _replace(self, owner: Any, name: str, handler: Handler) -> None:
        original = getattr(owner, name)
        self._saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
        setattr(owner, name, self._probe(original, handler))

    def _unpatch(self) -> None:
        while self._saved:
            owner, name, before = self._saved.pop()
            if before is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, before)

    def _probe(self, original: Any, handler: Handler) -> Callable[..., Any]:
        record, o = self.o.record, self.o

        def probe(*args: Any, **kwargs: Any) -> Any:
            if o.quiet or threading.get_ident() != self._thread:
                return original(*args, **kwargs)
            known = len(record.syncs) + len(record.transfers) + len(record.immediate)
            try:
                return handler(original, args, kwargs)
            except StrictFindingError:
                raise
            except Exception:
                self.changed()
                raise
            finally:
                now = len(record.syncs) + len(record.transfers) + len(record.immediate)
                if now != known or o.has_pending:
                    self.changed()

        probe.__name__ = getattr(original, "__name__", "probe")
        probe.__qualname__ = getattr(original, "__qualname__", probe.__name__)
        probe.__doc__ = getattr(original, "__doc__", None)
        return probe
