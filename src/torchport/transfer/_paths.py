"""Name places in a nested batch (``batch['x'][2].field``) for the errors of ``_tree``.

Only called once something went wrong, so nothing here is on the fast path. The walks are
iterative: they run on batches too deep (or cyclic) for the recursive walk.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections import deque
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import torch

ROOT = "batch"
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 40


def children(obj: Any) -> list[tuple[str, Any]]:
    """The (path suffix, value) pairs the recursive walk of ``_tree`` would descend into."""
    if isinstance(obj, (torch.Tensor, str, bytes, type)):
        return []
    exact = type(obj) in (dict, list, tuple)
    if not exact and callable(getattr(obj, "to", None)):
        return []  # moved whole by its own .to()
    if isinstance(obj, (dict, MappingProxyType)):
        return [(f"[{_SHORT.repr(key)}]", value) for key, value in obj.items()]
    if isinstance(obj, (list, tuple, deque)):
        return [(f"[{index}]", value) for index, value in enumerate(obj)]
    if isinstance(obj, (set, frozenset)):
        return [(f".<member {index}>", value) for index, value in enumerate(obj)]
    if dataclasses.is_dataclass(obj):
        missing = object()
        fields = ((f".{f.name}", getattr(obj, f.name, missing)) for f in dataclasses.fields(obj))
        return [(name, value) for name, value in fields if value is not missing]
    return []


def _walk(root: Any) -> Iterator[tuple[str, Any, dict[int, str]]]:
    """Depth first, each container once: (path, value, the containers on the path to it)."""
    on_path: dict[int, str] = {id(root): ROOT}
    done: set[int] = set()
    yield ROOT, root, on_path
    stack = [(iter(children(root)), ROOT, root)]
    while stack:
        pending, path, node = stack[-1]
        for suffix, child in pending:
            child_path = path + suffix
            yield child_path, child, on_path
            seen = id(child) in on_path or id(child) in done
            below = [] if seen else children(child)
            if below:
                on_path[id(child)] = child_path
                stack.append((iter(below), child_path, child))
                break
        else:
            stack.pop()
            del on_path[id(node)]
            done.add(id(node))


def find_cycle(root: Any) -> tuple[str, str] | None:
    """(outer, inner): a container's path and the path inside it that holds it again."""
    for path, value, on_path in _walk(root):
        outer = on_path.get(id(value))
        if outer is not None and outer != path:
            return outer, path
    return None


def locate(root: Any, target: Any) -> str:
    """The path of ``target`` (by identity) in ``root``."""
    return next((path for path, value, _ in _walk(root) if value is target), ROOT)
