"""Methods of values from outside the program: tensors, optimizers, scalers, loaders, NumPy..."""

from __future__ import annotations

import ast
from dataclasses import replace

from torchport.analyze import kinds as K
from torchport.analyze.flow import vocab as V
from torchport.analyze.flow.invocation import Invocation
from torchport.analyze.flow.torchapi import target_place
from torchport.analyze.flow.values import (
    HOST,
    NONE,
    UNKNOWN,
    Kind,
    OKind,
    Origin,
    Place,
    Val,
    seq,
    tensor,
)


def tensor_method(c: Invocation, recv: Val, name: str) -> Val:
    assert isinstance(c.node.func, ast.Attribute)
    receiver = c.node.func.value
    if name in ("to", "cuda", "cpu", "type"):
        return _move(c, recv, name)
    if name == "numpy":
        c.sink((receiver, recv), "numpy", "`.numpy()`")
        return Val(Kind.NDARRAY, dtype=recv.dtype)
    if name == "backward":
        return NONE
    if name in V.TENSOR_TO_HOST:
        return HOST
    if name in K.DTYPE_CASTS:
        if K.DTYPE_CASTS[name] == "float32":
            c.ip.events.casts.update(recv.origins)
        return replace(recv, dtype=K.DTYPE_CASTS[name], qual=None, _key=None)
    if name == "type_as" and c.args:
        other = c.args[0][1]
        return tensor(other.origins, dtype=other.dtype)
    if name in V.SAME_PLACE:
        return tensor(recv.origins, dtype=recv.dtype)
    if name == "requires_grad_":
        for o in recv.origins:
            if o.kind in (OKind.FACTORY, OKind.DATA):
                o.requires_grad = True
        return recv
    return _operation(c, recv, name, receiver)


def _operation(c: Invocation, recv: Val, name: str, receiver: ast.expr) -> Val:
    """``x.add(y)``, ``x.masked_fill(mask, v)``...: tensors given must be where ``x`` is."""
    tensors = c.tensors()
    if name in V.VALUE_LAST and c.args:
        fill = c.args[-1][0]
        tensors = [(e, v) for e, v in tensors if e is not fill]
    meeting = [(e, v) for e, v in tensors if not v.scalar]
    written = name.endswith("_")  # in place: x must be where the others are, even when 0-dim
    if name not in V.NO_MEET and written and tensors:
        c.meet([(receiver, recv), *tensors], f"`.{name}()`", written=True)
    elif name not in V.NO_MEET and not written and meeting and not recv.scalar:
        c.meet([(receiver, recv), *meeting], f"`.{name}()`")
    if not written:  # x.uniform_(generator=g) fills x in place: not a draw we move
        c.draw([(receiver, recv)])
    if written and recv.kind is Kind.TENSOR and recv.scalar:
        return recv  # an accumulator written in place: the tensor made where it was made
    origins = recv.origins
    for _, given in tensors:
        origins = origins | given.origins
    if name in V.SEQ_RESULTS:
        return seq(tensor(origins, dtype=recv.dtype))
    scalar = (name in V.REDUCTIONS and not c.args and not c.kwargs) or recv.scalar
    kind = Kind.TENSOR if recv.kind is Kind.TENSOR else Kind.UNKNOWN
    dtype = "int64" if name in ("argmax", "argmin") else recv.dtype
    return Val(kind, origins, scalar=scalar, dtype=dtype)


def _move(c: Invocation, recv: Val, name: str) -> Val:
    if name == "type":
        spec = c.args[0][0] if c.args else None
        typed = isinstance(spec, ast.Constant) and isinstance(spec.value, str)
        if not (typed and "cuda" in spec.value):  # type: ignore[union-attr]
            return recv
        place: Place | None = Place.DEVICE
        follows: frozenset[Origin] = frozenset()
    else:
        place, follows = target_place(c, name)
    dtype = recv.dtype
    for _, value in c.everything:
        if value.kind is Kind.QUAL and value.qual:
            dtype = K.dtype_name(value.qual) or dtype
    if dtype == "float32" and recv.dtype != "float32":
        c.ip.events.casts.update(recv.origins)
    if place is None and not follows:
        return replace(recv, dtype=dtype, _key=None)
    made = c.origin(OKind.MOVE, place or Place.ANY, f"`{c.text()}` at {c.where()}")
    made.follows = follows or None
    if recv.kind is not Kind.TENSOR:
        # something of unknown kind moved with .to(): whatever it holds moves with it
        return Val(
            recv.kind, frozenset([made]), parts=recv.parts, item=recv.item, fields=recv.fields
        )
    return tensor([made], scalar=recv.scalar, dtype=dtype)


def other_method(c: Invocation, recv: Val, name: str) -> Val:
    kind = recv.kind
    if kind is Kind.SCALER:
        if name == "scale" and c.args:
            return c.args[0][1]
        return HOST if name in ("get_scale", "is_enabled") else NONE
    if kind in (Kind.OPTIMIZER, Kind.SCHEDULER):
        if name == "state_dict":
            return Val(Kind.SEQ, item=UNKNOWN)
        return HOST if name.startswith("get_") else NONE
    if kind is Kind.DIST:
        return _distribution(c, recv, name)
    if kind is Kind.GENERATOR:
        return recv if name == "manual_seed" else HOST
    if kind is Kind.NDARRAY:
        return _ndarray(c, recv, name)
    if kind is Kind.OBJECT and recv.qual == "numpy.random.Generator":
        dtype = "float64" if name in K.RNG_FLOAT64 else ("int64" if name == "integers" else None)
        return Val(Kind.NDARRAY, dtype=dtype)
    if kind is Kind.OBJECT and recv.qual and recv.qual.startswith(V.HOST_LIBRARIES):
        for argument in c.tensors():
            c.sink(argument, "cpu", f"`.{name}()`")
        return UNKNOWN
    if kind is Kind.UNKNOWN and recv.origins:
        return _unknown_with_tensors(recv, name)
    return HOST if kind is Kind.HOST else UNKNOWN


def _distribution(c: Invocation, recv: Val, name: str) -> Val:
    if name in ("log_prob", "cdf", "icdf") and c.args:
        value = c.args[0][1]
        if value.tensorish and not value.scalar:
            assert isinstance(c.node.func, ast.Attribute)
            c.meet([(c.node.func.value, recv), c.args[0]], f"`.{name}()`")
    return tensor(recv.origins)


def _ndarray(c: Invocation, recv: Val, name: str) -> Val:
    if name == "astype" and c.args:
        expr, value = c.args[0]
        spelled = expr.value if isinstance(expr, ast.Constant) else None
        qual = value.qual or (spelled if isinstance(spelled, str) else None)
        return Val(Kind.NDARRAY, dtype=K.dtype_name(qual))
    return HOST if name in ("item", "tolist") else Val(Kind.NDARRAY, dtype=recv.dtype)


def _unknown_with_tensors(recv: Val, name: str) -> Val:
    """A batch (or checkpoint) of unknown structure: what its methods give holds its tensors."""
    inner = Val(Kind.UNKNOWN, recv.origins)
    if name == "items":
        return seq(seq(None, (HOST, inner)))
    if name == "values":
        return seq(inner)
    if name == "keys":
        return seq(HOST)
    return inner
