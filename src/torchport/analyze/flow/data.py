"""``torch.utils.data``: datasets, loaders and what their batches are.

A loader's batch is its dataset's item after collation. Its tensors get one *pending* batch
origin per loader; where the program binds a batch to a name (``for x, y in loader``), each name
gets an origin of its own (:func:`stmts.rebatch`), so the port can move ``x`` and leave
``lengths`` on the host.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from torchport.analyze.flow.interp import Frame, Interp
from torchport.analyze.flow.invocation import Invocation
from torchport.analyze.flow.program import ClassInfo, FuncInfo
from torchport.analyze.flow.torchapi import loader_site
from torchport.analyze.flow.values import (
    HOST,
    UNKNOWN,
    Kind,
    OKind,
    Origin,
    Place,
    Val,
    all_origins,
    element,
    map_elements,
    seq,
    tensor,
)

NUMBERS = frozenset({"py:int", "py:float", "py:bool"})


def data_call(c: Invocation, q: str) -> Val:
    name = q.rsplit(".", 1)[-1]
    if name == "DataLoader":
        return _loader(c)
    if name == "TensorDataset":
        for argument in c.args:
            c.pin(argument, "the tensors of a `TensorDataset`")
        rows = tuple(tensor(v.origins, dtype=v.dtype) for _, v in c.args)
        return Val(Kind.DATASET, item=seq(None, rows))
    first = c.value(0)
    if name == "random_split" and first is not None:
        return seq(first)
    if name == "Subset" and first is not None:
        return first
    if name == "ConcatDataset" and first is not None:
        return element(first)
    if name.endswith("Sampler"):
        generator = c.arg(99, "generator")
        if generator is not None:
            c.pin(generator, "the generator of a sampler")
        return Val(Kind.SAMPLER)
    if name == "default_collate" and first is not None:
        return collate(first, _pending(c))
    return UNKNOWN


def _pending(c: Invocation) -> Origin:
    return c.origin(OKind.BATCH, Place.HOST, f"a batch from the loader at {c.where()}")


def _loader(c: Invocation) -> Val:
    loader_site(c)
    dataset = c.value(0, "dataset") or UNKNOWN
    generator = c.arg(99, "generator")
    if generator is not None:
        c.pin(generator, "the generator of a DataLoader")
    item = dataset_item(c.ip, c.fr, c.node, dataset)
    pending = _pending(c)
    c.ip.events.sources.setdefault(pending, set()).update(all_origins(item))
    collate_fn = c.value(99, "collate_fn")
    if (
        collate_fn is not None
        and collate_fn.kind is Kind.FUNC
        and isinstance(collate_fn.ref, FuncInfo)
    ):
        func = collate_fn.ref
        c.ip.data_funcs.add(func)
        made = c.ip.call_function(c.fr, c.node, func, [seq(item)])
        return Val(Kind.LOADER, item=_reoriginate(made, pending))
    return Val(Kind.LOADER, item=collate(item, pending))


def dataset_item(ip: Interp, fr: Frame, node: ast.Call, dataset: Val) -> Val:
    """One sample of ``dataset`` (a program Dataset's ``__getitem__`` is interpreted)."""
    cls = dataset.ref
    if isinstance(cls, ClassInfo):
        getitem = cls.method("__getitem__")
        if getitem is not None:
            index = Val(Kind.HOST, dtype="py:int")
            return ip.call_function(fr, node, getitem, [index], bound=dataset)
        iterate = cls.method("__iter__")
        if iterate is not None:
            return element(ip.call_function(fr, node, iterate, [], bound=dataset))
    if dataset.kind is Kind.DATASET and dataset.item is not None:
        return dataset.item
    if dataset.kind is Kind.SEQ:
        return element(dataset)
    return UNKNOWN


def collate(item: Val, pending: Origin, depth: int = 4) -> Val:
    """``default_collate`` of samples like ``item``: numbers and arrays become tensors; the
    tensors a dataset makes on the device (``__getitem__`` moving each sample) stay there."""
    if item.kind is Kind.TENSOR and item.origins and all(_on_device(o) for o in item.origins):
        return item
    if item.kind in (Kind.TENSOR, Kind.NDARRAY) or (
        item.kind is Kind.HOST and item.dtype in NUMBERS
    ):
        return tensor([pending], dtype=item.dtype if item.kind is not Kind.HOST else None)
    if item.kind is Kind.SEQ and depth > 0:
        return Val(Kind.SEQ, **map_elements(item, lambda v: collate(v, pending, depth - 1)))
    if item.kind is Kind.HOST and item.dtype == "py:str":
        return Val(Kind.SEQ, item=item)
    # a sample we cannot see into: unpacked, its parts are collated tensors
    return Val(Kind.UNKNOWN, frozenset([pending]), item=tensor([pending]))


def _on_device(origin: Origin) -> bool:
    """Made on the device, or where a tensor made there is (``device=x.device``)."""
    if origin.follows:
        return all(o.written is Place.DEVICE for o in origin.follows)
    return origin.written is Place.DEVICE


def _reoriginate(value: Val, pending: Origin, depth: int = 4) -> Val:
    """What a collate function made: its tensors are the loader's batch (where it moved them
    to the device itself, or its dataset made them there, they stay there)."""
    if value.tensorish:
        moved = frozenset(o for o in value.origins if o.kind is OKind.MOVE or _on_device(o))
        return replace(value, origins=moved or frozenset([pending]), _key=None)
    if value.kind is Kind.SEQ and depth > 0:
        mapped = map_elements(value, lambda v: _reoriginate(v, pending, depth - 1))
        return Val(Kind.SEQ, **mapped)
    if value.kind in (Kind.UNKNOWN, Kind.OBJECT):
        return Val(Kind.UNKNOWN, frozenset([pending]))
    return HOST if value.kind is Kind.HOST else value
