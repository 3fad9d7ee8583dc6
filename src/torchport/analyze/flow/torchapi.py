"""Calls of names from outside the program: what comes back, and which arguments must meet.

Each entry answers two questions for the placement analysis: what kind of value a call returns
(and from which origins), and which arguments must share a device or stay on the host. The
names themselves are listed in :mod:`vocab`.
"""

from __future__ import annotations

import ast

from torchport.analyze import kinds as K
from torchport.analyze.flow import vocab as V
from torchport.analyze.flow.events import LoaderSite
from torchport.analyze.flow.invocation import Arg, Invocation
from torchport.analyze.flow.values import (
    HOST,
    NONE,
    UNKNOWN,
    Kind,
    OKind,
    Origin,
    Place,
    Val,
    element,
    join_all,
    seq,
    tensor,
)

TENSORISH = V.TENSORISH
NAMEDTUPLE = "<a namedtuple class>"


def call_qual(c: Invocation, q: str) -> Val:
    if q in V.FACTORIES or (q in V.LIKE and ("device" in c.kwargs or not c.args)):
        return tensor([_made(c, OKind.FACTORY, q)], dtype=_dtype_of(c))
    if q in V.LIKE:
        first = c.args[0][1]
        return tensor(first.origins, dtype=first.dtype)
    if q in V.DATA:
        return _data(c, q)
    if q == "torch.nn.Parameter" and c.args:
        inner = c.args[0][1]
        return Val(Kind.TENSOR, inner.origins, qual="torch.nn.Parameter", dtype=inner.dtype)
    if q in ("torch.device", "torch.accelerator.current_accelerator"):
        return _device(c, q)
    if q == "torch.Generator":
        return _generator(c)
    if q in V.CONTEXTS or q.startswith(V.HOST_NAMESPACES):
        return HOST
    if q == "torch.load":
        written, follows = _written(c, "map_location")
        made = c.origin(OKind.LOAD, written, f"`torch.load` at {c.where()}")
        made.follows = follows or None
        return Val(Kind.UNKNOWN, frozenset([made]))
    if q in V.PASS_THROUGH:
        return c.args[0][1] if c.args else UNKNOWN
    if q in ("collections.namedtuple", "typing.NamedTuple"):
        return Val(Kind.QUAL, qual=NAMEDTUPLE)
    if q == NAMEDTUPLE:  # an instance of a namedtuple class: a tuple of what it was given
        values = tuple(v for _, v in c.everything)
        return seq(None, values)
    if q.startswith("torchport."):
        return _torchport(c, q)
    if q.startswith("torch.optim.lr_scheduler."):
        return Val(Kind.SCHEDULER, qual=q)
    if q.startswith("torch.optim.") and _capitalised(q):
        return Val(Kind.OPTIMIZER, qual=q)
    if q in V.GRAD_SCALERS:
        return Val(Kind.SCALER, qual=q)
    if q.startswith("torch.utils.data."):
        from torchport.analyze.flow.data import data_call

        return data_call(c, q)
    if q.startswith("torch.distributions.") and _capitalised(q):
        tensors = c.tensors()
        c.meet(tensors, f"`{q.rsplit('.', 1)[-1]}(...)`")
        return Val(Kind.DIST, _origins(tensors))
    if q.startswith("torch.nn.utils.rnn."):
        return _rnn_util(c, q)
    if _module_class(q):
        return _module_ctor(c, q)
    if q.startswith(V.NO_RESULT):
        return NONE
    if q in V.HOST_RESULTS:
        return HOST
    if q.startswith("torch.") and not q.startswith("torch.utils."):
        return _torch_function(c, q)
    if q.startswith(V.HOST_LIBRARIES):
        return _host_library(c, q)
    if q.startswith("builtins."):
        from torchport.analyze.flow.pybuiltins import builtin_call

        return builtin_call(c, q[len("builtins.") :])
    if q.startswith("torchvision.transforms.") and _capitalised(q):
        return Val(Kind.OBJECT, qual=q)
    return HOST if q.startswith(V.HOST_SCALARS) else UNKNOWN


def _capitalised(q: str) -> bool:
    return q.rsplit(".", 1)[-1][:1].isupper()


def _origins(values: list[Arg]) -> frozenset[Origin]:
    out: frozenset[Origin] = frozenset()
    for _, value in values:
        out |= value.origins
    return out


def _dtype_of(c: Invocation) -> str | None:
    found = c.kwargs.get("dtype")
    if found is None:
        return None
    expr = found[0]
    text = expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else None
    return K.dtype_name(text or c.qualname(expr))


# -- devices ------------------------------------------------------------------------------------


def device_value_place(value: Val) -> tuple[Place | None, frozenset[Origin]]:
    """Where a device argument (a string, a ``torch.device``, ``x.device``) points.

    A device the program spells out (``"cuda" if torch.cuda.is_available() else "cpu"``) is the
    accelerator wherever one can be chosen: that is the machine the port is for. The device of a
    value (``x.device``) is wherever that value is: its origins are returned to be followed.
    """
    if not value.origins:
        return (Place.ANY if value.kind is Kind.DEVICE else None), frozenset()
    spelled = [
        o for o in value.origins if o.kind is OKind.MOVE and o.follows is None and _spelled(o)
    ]
    if len(spelled) == len(value.origins):
        places = {o.written for o in spelled}
        if Place.DEVICE in places:
            return Place.DEVICE, frozenset()
        return (Place.HOST if places == {Place.HOST} else Place.ANY), frozenset()
    return None, value.origins


def _spelled(origin: Origin) -> bool:
    return isinstance(origin.node, ast.Constant | ast.JoinedStr | ast.Call)


def target_place(c: Invocation, name: str) -> tuple[Place | None, frozenset[Origin]]:
    """Where ``.to(...)``/``.cuda()``/``.cpu()`` sends its receiver (None: only a dtype cast)."""
    if name == "cuda":
        return Place.DEVICE, frozenset()
    if name == "cpu":
        return Place.HOST, frozenset()
    target = c.arg(0, "device")
    if target is None:
        return None, frozenset()
    expr, value = target
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return Place.DEVICE, frozenset()  # .to(0): a device index
    if value.kind is Kind.QUAL:
        return None, frozenset()  # x.to(torch.float32)
    place, follows = device_value_place(value)
    if follows or place is not None:
        return place, follows
    if value.kind is Kind.HOST:
        return Place.DEVICE, frozenset()  # an index such as .to(rank)
    return (Place.ANY, frozenset()) if value.kind is Kind.UNKNOWN else (None, frozenset())


def _written(c: Invocation, key: str = "device") -> tuple[Place, frozenset[Origin]]:
    found = c.kwargs.get(key)
    if found is None or found[1].kind is Kind.NONE:  # `device=None`: the default, the CPU
        return Place.HOST, frozenset()
    place, follows = device_value_place(found[1])
    return (place or Place.ANY), follows


def _made(c: Invocation, kind: OKind, q: str) -> Origin:
    written, follows = _written(c)
    made = c.origin(kind, written, f"`torch.{q.rsplit('.', 1)[-1]}` at {c.where()}")
    made.follows = follows or None
    grad = c.kwargs.get("requires_grad")
    if grad is not None and isinstance(grad[0], ast.Constant) and grad[0].value is True:
        made.requires_grad = True
    return made


def _device(c: Invocation, q: str) -> Val:
    if q == "torch.accelerator.current_accelerator" or not c.args:
        return Val(Kind.DEVICE, frozenset([c.origin(OKind.MOVE, Place.DEVICE, "the accelerator")]))
    value = c.args[0][1]
    if value.origins:
        return Val(Kind.DEVICE, value.origins)
    if value.kind is Kind.HOST and len(c.args) == 1:
        return Val(Kind.DEVICE)  # torch.device(name) with a name we cannot read
    return Val(Kind.DEVICE, frozenset([c.origin(OKind.MOVE, Place.DEVICE, c.text())]))


def _generator(c: Invocation) -> Val:
    written, follows = _written(c)
    if c.args:
        place, follows = device_value_place(c.args[0][1])
        written = place or Place.ANY
    made = c.origin(OKind.GENERATOR, written, f"a generator at {c.where()}")
    made.follows = follows or None
    return Val(Kind.GENERATOR, frozenset([made]))


# -- tensors ------------------------------------------------------------------------------------


def _data(c: Invocation, q: str) -> Val:
    first = c.args[0][1] if c.args else None
    dtype = _dtype_of(c) or V.TYPED_DATA.get(q)
    copies = q in ("torch.as_tensor", "torch.asarray", "torch.tensor")
    if first is not None and first.kind is Kind.TENSOR and copies and "device" not in c.kwargs:
        return tensor(first.origins, dtype=dtype or first.dtype)
    if first is not None and first.kind is Kind.NDARRAY and dtype is None:
        dtype = first.dtype
    made = _made(c, OKind.DATA, q)
    from_array = first is not None and first.kind is Kind.NDARRAY and "dtype" not in c.kwargs
    made.dtype = first.dtype if from_array and first is not None else None
    listed = c.args and isinstance(c.args[0][0], ast.List | ast.Tuple | ast.ListComp)
    scalar = first is not None and first.kind is Kind.HOST and copies and not listed
    return tensor([made], scalar=scalar, dtype=dtype)


def _torchport(c: Invocation, q: str) -> Val:
    """torchport's own library: ``to_device`` moves, ``DeviceLoader`` yields moved batches."""
    name = q.rsplit(".", 1)[-1]
    if name == "default_device":
        made = c.origin(OKind.MOVE, Place.DEVICE, "default_device()")
        return Val(Kind.DEVICE, frozenset([made]))
    if name not in ("to_device", "DeviceLoader") or not c.args:
        return UNKNOWN
    target = c.value(1, "device")
    place, follows = device_value_place(target) if target is not None else (Place.DEVICE, None)
    made = c.origin(OKind.MOVE, place or Place.ANY, f"`{name}` at {c.where()}")
    made.follows = follows or None
    moved = Val(Kind.UNKNOWN, frozenset([made]), item=tensor([made]))
    if name == "DeviceLoader":
        return Val(Kind.LOADER, item=moved)
    first = c.args[0][1]
    if first.kind is Kind.TENSOR:
        return tensor([made], dtype=first.dtype)
    from torchport.analyze.flow.exprs import moved_to

    shaped = moved_to(first, made)
    return shaped if shaped.origins or shaped.parts or shaped.fields else moved


def _torch_function(c: Invocation, q: str) -> Val:
    name = q.rsplit(".", 1)[-1]
    items: list[Arg]
    if name in V.OVER_LISTS and c.args:
        listed_expr, listed = c.args[0]
        if listed.parts is not None and isinstance(listed_expr, ast.List | ast.Tuple):
            items = list(zip(listed_expr.elts, listed.parts, strict=False))
        else:
            items = [(listed_expr, element(listed))]
        items += c.args[1:]
    else:
        items = c.device_operands(q)
    tensors = [(e, v) for e, v in items if v.tensorish]
    c.meet([(e, v) for e, v in tensors if not v.scalar], f"`torch.{name}`")
    c.draw([(e, v) for e, v in c.args if v.tensorish])
    if not tensors:
        return UNKNOWN
    scalar = name in V.REDUCTIONS and len(c.args) == 1 and not c.kwargs
    out = tensor(_origins(tensors), scalar=scalar or all(v.scalar for _, v in tensors))
    if name in V.SEQ_RESULTS or (name == "where" and len(c.args) == 1):
        return seq(out)
    return out


def _rnn_util(c: Invocation, q: str) -> Val:
    name = q.rsplit(".", 1)[-1]
    first = c.args[0][1] if c.args else UNKNOWN
    if name == "pack_padded_sequence":
        lengths = c.arg(1, "lengths")
        if lengths is not None:
            c.sink(lengths, "lengths", "the lengths of `pack_padded_sequence`")
        return tensor(first.origins)
    if name == "pad_packed_sequence":
        label = f"the lengths from `pad_packed_sequence` at {c.where()}"
        made = c.origin(OKind.DATA, Place.HOST, label)
        return seq(None, (tensor(first.origins), tensor([made])))
    inner = element(first)
    return tensor(first.origins | inner.origins)


def _host_library(c: Invocation, q: str) -> Val:
    for argument in c.everything:
        value = argument[1]
        if value.tensorish or (value.kind is Kind.SEQ and element(value).tensorish):
            c.sink(argument, "cpu", f"`{q.replace('numpy.', 'np.')}`")
    if not q.startswith("numpy."):
        return UNKNOWN
    if q == "numpy.random.default_rng":
        return Val(Kind.OBJECT, qual="numpy.random.Generator")
    dtype = _dtype_of(c)
    if dtype is None and q in K.NUMPY_FLOAT64:
        dtype = "float64"
    return Val(Kind.NDARRAY, dtype=dtype)


# -- modules ------------------------------------------------------------------------------------


def _module_class(q: str) -> bool:
    parts = q.split(".")
    if q.startswith("torch.nn."):
        if {"functional", "init", "utils", "parameter"} & set(parts):
            return False
        return parts[-1][:1].isupper() and parts[-1] not in V.NOT_MODULES
    if q.startswith("torchvision.models.") and parts[-1][:1].islower():
        return True  # resnet18(), vit_b_16()...
    return q == "timm.create_model" or (q.startswith("transformers.") and "from_pretrained" in q)


_CONTAINERS = frozenset({"ModuleList", "Sequential"})


def _module_ctor(c: Invocation, q: str) -> Val:
    short = q.rsplit(".", 1)[-1]
    first = c.args[0][1] if c.args else None
    if q in V.WRAPPERS:
        # a wrapper runs the module where the module is: to placement it is the same module
        if first is not None and first.kind is Kind.MODULE:
            return Val(Kind.MODULE, first.origins, ref=first.ref, qual=q)
        return Val(Kind.MODULE, qual=q)  # of a module not followed: it makes no parameters
    made = c.origin(OKind.MODEL, Place.HOST, f"`{short}(...)` at {c.where()}")
    held: list[Val] = []
    for _, value in c.everything:
        for inner in [value, *(value.parts or ()), *([value.item] if value.item else [])]:
            if inner.kind is not Kind.MODULE:
                continue
            held.append(inner)
            for o in inner.origins:
                if o.kind is OKind.MODEL and o.parent is None and o is not made:
                    o.parent = made  # a layer given to nn.Sequential moves with it
    if short in _CONTAINERS and held:
        # iterating or indexing it gives its layers: calls reach their forward
        return Val(Kind.MODULE, frozenset([made]), qual=q, item=join_all(held))
    loss = short.endswith("Loss") or short in ("CosineSimilarity", "PairwiseDistance")
    # a loss that reduces gives a 0-dim tensor, which meets tensors on any device; with
    # reduction="none" it gives one value per sample (scalar=False on the module says so)
    reduction = c.kwargs.get("reduction")
    per_sample = reduction is not None and _constant(reduction[0]) == "none"
    return Val(Kind.MODULE, frozenset([made]), qual=q, loss=loss, scalar=loss and not per_sample)


def _constant(expr: ast.expr) -> object:
    return expr.value if isinstance(expr, ast.Constant) else None


def module_output(module: Val, inputs: list[Val]) -> Val:
    """What calling a torch module returns: on the module's device (a loss: its inputs')."""
    origins = module.origins
    if module.loss or module.kind is not Kind.MODULE:
        for value in inputs:
            if value.tensorish:
                origins = origins | value.origins
    out = tensor(origins, scalar=module.loss and module.scalar)
    hidden = V.RNN_HIDDEN.get(module.qual or "")
    if hidden == 2:
        return seq(None, (out, seq(None, (out, out))))
    if hidden == 1 or module.qual in V.PAIRS:
        return seq(None, (out, out))
    return out


def annotation_value(qual: str | None) -> Val | None:
    kind = {
        "torch.Tensor": Kind.TENSOR, "torch.nn.Module": Kind.MODULE,
        "torch.utils.data.DataLoader": Kind.LOADER, "torch.device": Kind.DEVICE,
        "numpy.ndarray": Kind.NDARRAY,
    }.get(qual or "")  # fmt: skip
    return None if kind is None else Val(kind)


def loader_site(c: Invocation) -> LoaderSite:
    site = c.ip.events.loaders.get(id(c.node))
    if site is None:
        site = LoaderSite(c.node, c.fr.unit, c.fr.func, c.star, "pin_memory" in c.kwargs)
        c.ip.events.loaders[id(c.node)] = site
    return site
