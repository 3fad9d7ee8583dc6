"""Where a module keeps what `.to(device)` does not move: the lines that assign the attribute.

A tensor left on the CPU by ``model.to(device)`` is held by a plain attribute (``self.mask =
torch.ones(...)``, not a buffer) or belongs to a layer kept in a plain list or dict (``self.heads
= [nn.Linear(...) ...]``). The line to change is the assignment, often far from the op that
fails: it is found in the source of the holder's class, only when a failure is explained.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable

from torch import nn

from torchport.runtime.sites import Site, is_user_file


def unregistered_holder(stack: list[nn.Module]) -> tuple[nn.Module, str] | None:
    """The module on ``stack`` and its attribute (a plain list, tuple or dict) that hold a
    running module which is therefore not registered: the outermost such one."""
    for index, module in enumerate(stack):
        for owner in stack[:index]:
            for attr, value in vars(owner).items():
                if not attr.startswith("_") and _holds(value, module):  # not _modules
                    return owner, attr
    return None


def _holds(value: object, module: nn.Module) -> bool:
    items: Iterable[object]
    if isinstance(value, dict):
        items = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        return False
    return any(item is module for item in items)


def assignment_sites(owner: nn.Module, attr: str) -> list[Site]:
    """The lines of ``owner``'s class (and its user-written bases) that assign ``self.attr``."""
    pattern = re.compile(rf"^\s*self\.{re.escape(attr)}\s*(?::[^=]+)?=(?!=)")
    sites: list[Site] = []
    for cls in type(owner).__mro__:
        if cls is nn.Module or cls is object:
            break
        try:
            path = inspect.getsourcefile(cls)
            lines, first = inspect.getsourcelines(cls)
        except (OSError, TypeError):
            continue
        if path is None or not is_user_file(path):
            continue
        sites += [
            Site(path, first + offset, f"self.{attr} = ...")
            for offset, line in enumerate(lines)
            if pattern.match(line)
        ]
    return sites
