"""Which module is running: global forward hooks keep a stack, names come from the root model.

The root's name is the variable the user called it through (``model`` in ``model(x)``); a
child's name is its qualified name under the root (``model.encoder.fc1``). Hooks return None, so
they never change what a module computes. The stack is per thread: a module running in one
thread says nothing about the ops of another (a prefetch thread copying the next batch).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks

from torchport.runtime.failure import StrictFindingError
from torchport.runtime.sites import Site, user_frame, user_frame_from, user_site


class ModuleTracker:
    """The stack of modules whose forward is running, with their dotted names."""

    def __init__(self, on_enter: Callable[[nn.Module, tuple[Any, ...]], None] | None) -> None:
        self._local = threading.local()
        self._on_enter = on_enter
        self._root_names: weakref.WeakKeyDictionary[nn.Module, str] = weakref.WeakKeyDictionary()
        self._handles: list[Any] = []
        self.on_internal_error: Callable[[str, BaseException], None] | None = None
        self.passes = 0  # outermost forward calls so far: the program's steps, roughly

    @property
    def stack(self) -> list[nn.Module]:
        """This thread's running modules, outermost first."""
        try:
            stack: list[nn.Module] = self._local.stack
        except AttributeError:
            stack = self._local.stack = []
        return stack

    def install(self) -> None:
        self._handles = [
            module_hooks.register_module_forward_pre_hook(self._pre),
            module_hooks.register_module_forward_hook(self._post, always_call=True),
        ]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self.stack.clear()

    @contextlib.contextmanager
    def loading(self) -> Iterator[None]:
        """A block in which a DataLoader fetches a batch: modules it runs are not tracked."""
        self._local.loading = getattr(self._local, "loading", 0) + 1
        try:
            yield
        finally:
            self._local.loading -= 1

    def _pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if getattr(self._local, "loading", 0):
            return
        try:
            if not self.stack:
                self.passes += 1
                if module not in self._root_names:
                    self._root_names[module] = _variable_name(module)
            self.stack.append(module)
            if self._on_enter is not None:
                self._on_enter(module, args)
        except StrictFindingError:
            raise
        except Exception as internal:  # noqa: BLE001 - a hook never fails the user's module
            if self.on_internal_error is not None:
                self.on_internal_error("tracking a module", internal)

    def _post(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if self.stack and self.stack[-1] is module:
            self.stack.pop()
        elif module in self.stack:
            del self.stack[self.stack.index(module) :]

    @property
    def current(self) -> nn.Module | None:
        return self.stack[-1] if self.stack else None

    def path(self, module: nn.Module) -> str:
        """``model.encoder.fc1`` for a module on the stack (or a root seen before)."""
        roots = [m for m in self.stack if m in self._root_names] or list(self._root_names)
        for root in roots:
            if root is module:
                return self._root_names[root]
            for name, child in root.named_modules():
                if child is module and name:
                    return f"{self._root_names[root]}.{name}"
        return self._unregistered_path(module)

    def _unregistered_path(self, module: nn.Module) -> str:
        """``model.layers[0]`` for a module held in a plain list or dict attribute."""
        for owner in reversed(self.stack):
            for attr, value in vars(owner).items():
                items = (
                    value.items()
                    if isinstance(value, dict)
                    else enumerate(value)
                    if (isinstance(value, (list, tuple)))
                    else ()
                )
                for key, item in items:
                    if item is module:
                        return f"{self.path(owner)}.{attr}[{key!r}]"
        return f"<unregistered {type(module).__name__}>"

    def registered_under_root(self, module: nn.Module) -> bool:
        """False when a running module is not a registered child of the model that calls it."""
        root = self.stack[0] if self.stack else None
        if root is None or root is module:
            return True
        return any(child is module for child in root.modules())


def _variable_name(module: nn.Module) -> str:
    frame = user_frame(4)
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for name, value in scope.items():
                if value is module:
                    return name
        frame = frame.f_back
    return type(module).__name__


def weight_device(module: nn.Module) -> torch.device | None:
    """The device of the module's own first parameter or buffer, if it has one."""
    for param in module.parameters(recurse=False):
        return param.device
    for buffer in module.buffers(recurse=False):
        return buffer.device
    return None


class StateSites:
    """The user's line that built each module (``nn.Linear(...)``, ``nn.CrossEntropyLoss(
    weight=w)``), kept per parameter and buffer name: a parameter left on the CPU (a layer in a
    plain dict, a loss never moved) is traced to that line.

    Kept by module and name, never by the tensor: a weak reference to a parameter would keep
    the simulated ``Module.to`` from swapping it in place (see simulate._keep_parameters).
    """

    def __init__(self) -> None:
        self._sites: weakref.WeakKeyDictionary[nn.Module, dict[str, Site]] = (
            weakref.WeakKeyDictionary()
        )
        self._made: weakref.WeakKeyDictionary[nn.Module, Site] = weakref.WeakKeyDictionary()
        self._handles: list[Any] = []

    def install(self) -> None:
        self._handles = [
            module_hooks.register_module_parameter_registration_hook(self._record),
            module_hooks.register_module_buffer_registration_hook(self._record),
        ]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _record(self, module: nn.Module, name: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            site = user_site(f"{type(module).__name__}(...)")
            if site is not None:
                self._sites.setdefault(module, {}).setdefault(name, site)
            if module not in self._made:
                made = _constructed_at(module)
                if made is not None:
                    self._made[module] = made

    def made_at(self, tensor: torch.Tensor, modules: list[nn.Module]) -> Site | None:
        """The user's line that made the module of the user's own class among ``modules``
        that holds ``tensor`` (``Wrapper(teacher, student)``: the line where it was left
        unmoved, where its ``__init__`` assignment is only where the tensor was set)."""
        for module in reversed(modules):
            made = self._made.get(module)
            if made is not None and any(v is tensor for v in _own_tensors(module)):
                return made
        return None

    def holder_made_at(self, tensor: torch.Tensor) -> Site | None:
        """Where the user's code made the module whose own parameter or buffer ``tensor`` is,
        among all the program made: a metric left on the host, whose ``update`` is no forward
        (so no running module names it)."""
        return self.made_at(tensor, list(self._made.keys()))

    def left_on_host_at(self, modules: list[nn.Module]) -> Site | None:
        """Where the innermost running module of the user's own class was made, when every
        tensor it holds is on the host: a host operand computed from its weights
        (``F.normalize(self.proxies)`` in a loss never moved) points there."""
        for module in reversed(modules):
            made, own = self._made.get(module), _own_tensors(module)
            if made is not None and own:
                return made if all(t.device.type == "cpu" for t in own) else None
        return None

    def built_at(self, tensor: torch.Tensor) -> Site | None:
        """Where the module holding ``tensor`` was built, among all the program built."""
        return self.site_of(tensor, list(self._sites.keys()))

    def site_of(self, tensor: torch.Tensor, modules: list[nn.Module]) -> Site | None:
        """Where the module among ``modules`` that holds ``tensor`` was built."""
        for module in reversed(modules):
            sites = self._sites.get(module)
            if not sites:
                continue
            own = [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]
            for name, value in own:  # by name: the sites are kept by name
                if value is tensor and name in sites:
                    return sites[name]
        return None


def _own_tensors(module: nn.Module) -> list[torch.Tensor]:
    return [*module.parameters(recurse=False), *module.buffers(recurse=False)]


def _constructed_at(module: nn.Module) -> Site | None:
    """Where the user's code called ``module``'s class, when the tensor is being set in the
    ``__init__`` of a class of the user's (the innermost user frame is that ``__init__``)."""
    frame = user_frame(3)
    if (
        frame is None
        or frame.f_code.co_name != "__init__"
        or frame.f_locals.get("self") is not module
    ):
        return None
    caller = user_frame_from(frame.f_back)
    return None if caller is None else Site(caller.f_code.co_filename, caller.f_lineno)
