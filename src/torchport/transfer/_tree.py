"""Rebuild a nested batch with every tensor replaced, keeping every container's type.

Handled containers: dict (and subclasses such as OrderedDict and defaultdict, whose
``default_factory`` is kept), list, tuple (namedtuples, structseqs and other subclasses, through
their own constructor), set, frozenset, deque (its ``maxlen`` kept), dataclass instances (frozen
ones too, and fields declared with ``init=False``). Objects with their own ``.to()`` method (a
PackedSequence, a tokenizer's BatchEncoding, a module) are handed to ``on_object`` whole, because
only they know which of their parts belong on the device. Everything else is returned as is.

No tensor is left behind silently: a container that holds tensors but cannot be rebuilt (a
mappingproxy, a tuple subclass whose constructor takes something else than its items) is a
TypeError, and a batch that contains itself a ValueError, each naming the place in the batch.
"""

from __future__ import annotations

import copy
import dataclasses
import operator
from collections import defaultdict, deque
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import torch

from torchport.transfer._paths import find_cycle, locate

TensorFn = Callable[[torch.Tensor], Any]
ObjectFn = Callable[[Any], Any]

# Types that can never hold a tensor: returned without a look inside.
_ATOMS: frozenset[type] = frozenset(
    {str, bytes, int, float, bool, complex, type(None), torch.dtype, torch.device}
)
_FIELDS: dict[type, tuple[str, ...]] = {}
# How each tuple subclass takes its items (True: one argument per item), learnt on first use.
_TUPLE_SPREAD: dict[type, bool] = {}


class _Unrebuildable(Exception):
    """Raised where a container cannot be rebuilt; the top level adds where it is."""

    def __init__(self, container: Any, why: str) -> None:
        super().__init__(why)
        self.container, self.why = container, why


def map_structure(obj: Any, on_tensor: TensorFn, on_object: ObjectFn) -> Any:
    """``obj`` with ``on_tensor`` applied to each tensor, ``on_object`` to each ``.to()`` owner."""
    try:
        return _map(obj, on_tensor, on_object)
    except RecursionError:
        # Found only now, so that the common, acyclic batch pays nothing for the check.
        cycle = find_cycle(obj)
        if cycle is None:
            raise  # deep, not cyclic: Python's own error says it best
        outer, inner = cycle
        raise ValueError(
            f"the batch contains itself: {inner} is {outer} again; a batch with a reference "
            "cycle cannot be copied to a device"
        ) from None
    except _Unrebuildable as exc:
        kind = type(exc.container)
        raise TypeError(
            f"cannot move the tensors in {locate(obj, exc.container)} "
            f"({kind.__module__}.{kind.__qualname__}): {exc.why}"
        ) from exc.__cause__


def _map(obj: Any, on_tensor: TensorFn, on_object: ObjectFn) -> Any:
    if isinstance(obj, torch.Tensor):
        return on_tensor(obj)
    cls = type(obj)
    if cls in _ATOMS:
        return obj
    # Exact built-in containers first: they are the common case and the cheapest to rebuild.
    if cls is dict:
        return {k: _map(v, on_tensor, on_object) for k, v in obj.items()}
    if cls is list:
        return [_map(v, on_tensor, on_object) for v in obj]
    if cls is tuple:
        return tuple([_map(v, on_tensor, on_object) for v in obj])
    if callable(getattr(obj, "to", None)) and not isinstance(obj, type):
        return on_object(obj)
    return _map_other(obj, cls, on_tensor, on_object)


def _map_other(obj: Any, cls: type, on_tensor: TensorFn, on_object: ObjectFn) -> Any:
    if isinstance(obj, defaultdict):
        items = {k: _map(v, on_tensor, on_object) for k, v in obj.items()}
        return cls(obj.default_factory, items)
    if isinstance(obj, dict):
        # copy.copy keeps the subclass and its attributes (OrderedDict, custom dicts).
        new = copy.copy(obj)
        for key, value in obj.items():
            new[key] = _map(value, on_tensor, on_object)
        return new
    if isinstance(obj, list):
        new_list = copy.copy(obj)
        new_list[:] = [_map(v, on_tensor, on_object) for v in obj]
        return new_list
    if isinstance(obj, (tuple, set, frozenset, deque)):
        values = [_map(v, on_tensor, on_object) for v in obj]
        if isinstance(obj, tuple):
            return _rebuild_tuple(obj, cls, values)
        return _rebuild_collection(obj, cls, values)
    if isinstance(obj, MappingProxyType):
        return _unrebuildable_unless_inert(
            obj,
            "a mappingproxy is a read-only view of a dict it does not own, so it cannot be "
            "rebuilt; pass a dict of it (dict(proxy)) instead",
        )
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _map_dataclass(obj, cls, on_tensor, on_object)
    return obj


def _same_items(new: Any, cls: type[Any], values: list[Any]) -> bool:
    return (
        type(new) is cls
        and len(new) == len(values)
        and all(a is b for a, b in zip(new, values, strict=True))
    )


def _rebuild_tuple(obj: tuple[Any, ...], cls: type, values: list[Any]) -> Any:
    if all(map(operator.is_, values, obj)):
        return obj  # immutable and unchanged: nothing to rebuild
    spread = _TUPLE_SPREAD.get(cls)
    if spread is not None:
        try:
            return cls(*values) if spread else cls(values)
        except Exception:  # noqa: BLE001 - tried again below, and reported there
            pass
    # A namedtuple takes its fields one by one, a structseq or a plain subclass one iterable;
    # a custom __new__ may take either. Each guess is checked, and remembered once it holds.
    spread_first = hasattr(cls, "_fields")
    last_error: Exception | None = None
    for spread in (spread_first, not spread_first):
        try:
            new = cls(*values) if spread else cls(values)
        except Exception as exc:  # noqa: BLE001 - a wrong guess at the constructor's signature
            last_error = exc
            continue
        if _same_items(new, cls, values):
            _TUPLE_SPREAD[cls] = spread
            return new
    name = cls.__qualname__
    try:
        return _unrebuildable_unless_inert(
            obj,
            f"neither {name}(items) nor {name}(*items) rebuilds it with the same items; give "
            f"{name} a .to() method, or make its constructor accept its items",
        )
    except _Unrebuildable as exc:
        raise exc from last_error


def _rebuild_collection(obj: Any, cls: type[Any], values: list[Any]) -> Any:
    if cls is set:
        return set(values)
    if cls is frozenset:
        return frozenset(values)
    if cls is deque:
        return deque(values, maxlen=obj.maxlen)
    try:
        new = _copy_subclass(obj, cls, values)
    except Exception:  # noqa: BLE001 - reported below, with the container's place
        new = None
    if type(new) is cls and len(new) == len(values):
        return new
    return _unrebuildable_unless_inert(
        obj, f"{cls.__qualname__} could not be copied with its items replaced"
    )


def _copy_subclass(obj: Any, cls: type, values: list[Any]) -> Any:
    if isinstance(obj, frozenset):
        return cls(values)
    # A shallow copy keeps the subclass, its attributes and a deque's maxlen.
    new = copy.copy(obj)
    new.clear()
    if isinstance(obj, deque):
        new.extend(values)
    else:
        new.update(values)
    return new


def _unrebuildable_unless_inert(obj: Any, why: str) -> Any:
    """``obj`` itself when nothing in it needs moving; else it is an error to leave it behind."""
    found: list[Any] = []

    def seen(leaf: Any) -> Any:
        found.append(leaf)
        return leaf

    _map(list(obj.values() if isinstance(obj, MappingProxyType) else obj), seen, seen)
    if not found:
        return obj
    raise _Unrebuildable(obj, why)


def _map_dataclass(obj: Any, cls: type, on_tensor: TensorFn, on_object: ObjectFn) -> Any:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    # A shallow copy, then field-by-field assignment: unlike calling the constructor, this keeps
    # init=False fields and works on frozen dataclasses (object.__setattr__ bypasses the freeze).
    new = copy.copy(obj)
    missing = object()
    for name in names:
        value = getattr(obj, name, missing)
        if value is missing:
            continue  # an init=False field that was never set
        mapped = _map(value, on_tensor, on_object)
        if mapped is not value:
            object.__setattr__(new, name, mapped)
    return new
