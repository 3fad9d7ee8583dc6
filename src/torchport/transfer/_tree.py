"""Rebuild a nested batch with every tensor replaced, keeping every container's type.

Handled containers: dict (and subclasses such as OrderedDict and defaultdict, whose
``default_factory`` is kept), list, tuple, namedtuple, dataclass instances (frozen ones too, and
fields declared with ``init=False``). Objects with their own ``.to()`` method (a PackedSequence,
a tokenizer's BatchEncoding, a module) are handed to ``on_object`` whole, because only they know
which of their parts belong on the device. Everything else is returned as is.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import torch

TensorFn = Callable[[torch.Tensor], Any]
ObjectFn = Callable[[Any], Any]

# Types that can never hold a tensor: returned without a look inside.
_ATOMS: frozenset[type] = frozenset(
    {str, bytes, int, float, bool, complex, type(None), torch.dtype, torch.device}
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def map_structure(obj: Any, on_tensor: TensorFn, on_object: ObjectFn) -> Any:
    """``obj`` with ``on_tensor`` applied to each tensor, ``on_object`` to each ``.to()`` owner."""
    if isinstance(obj, torch.Tensor):
        return on_tensor(obj)
    cls = type(obj)
    if cls in _ATOMS:
        return obj
    # Exact built-in containers first: they are the common case and the cheapest to rebuild.
    if cls is dict:
        return {k: map_structure(v, on_tensor, on_object) for k, v in obj.items()}
    if cls is list:
        return [map_structure(v, on_tensor, on_object) for v in obj]
    if cls is tuple:
        return tuple([map_structure(v, on_tensor, on_object) for v in obj])
    if callable(getattr(obj, "to", None)) and not isinstance(obj, type):
        return on_object(obj)
    return _map_other(obj, cls, on_tensor, on_object)


def _map_other(obj: Any, cls: type, on_tensor: TensorFn, on_object: ObjectFn) -> Any:
    if isinstance(obj, defaultdict):
        items = {k: map_structure(v, on_tensor, on_object) for k, v in obj.items()}
        return cls(obj.default_factory, items)
    if isinstance(obj, dict):
        # copy.copy keeps the subclass and its attributes (OrderedDict, custom dicts).
        new = copy.copy(obj)
        for key, value in obj.items():
            new[key] = map_structure(value, on_tensor, on_object)
        return new
    if isinstance(obj, tuple):
        values = [map_structure(v, on_tensor, on_object) for v in obj]
        return cls(*values) if hasattr(cls, "_fields") else cls(values)
    if isinstance(obj, list):
        new_list = copy.copy(obj)
        new_list[:] = [map_structure(v, on_tensor, on_object) for v in obj]
        return new_list
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _map_dataclass(obj, cls, on_tensor, on_object)
    return obj


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
        mapped = map_structure(value, on_tensor, on_object)
        if mapped is not value:
            object.__setattr__(new, name, mapped)
    return new
