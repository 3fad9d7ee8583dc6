"""Python's builtins: iteration helpers keep what they iterate; conversions give host values."""

from __future__ import annotations

import ast

from torchport.analyze.flow.interp import Frame
from torchport.analyze.flow.invocation import Invocation
from torchport.analyze.flow.values import (
    HOST,
    NONE,
    UNKNOWN,
    Kind,
    Val,
    element,
    join_all,
    seq,
)

TO_HOST = {
    "len": "py:int", "int": "py:int", "float": "py:float", "bool": "py:bool", "str": "py:str",
    "round": "py:float", "repr": "py:str", "format": "py:str", "isinstance": "py:bool",
    "hasattr": "py:bool", "callable": "py:bool", "id": "py:int", "hash": "py:int",
    "ord": "py:int", "chr": "py:str", "any": "py:bool", "all": "py:bool", "input": "py:str",
    "divmod": "py:int", "type": None, "vars": None, "globals": None, "locals": None,
    "issubclass": "py:bool", "setattr": None, "delattr": None, "open": None, "exit": None,
}  # fmt: skip


def builtin_call(c: Invocation, name: str) -> Val:
    first = c.value(0) or UNKNOWN
    if name in TO_HOST:
        return Val(Kind.HOST, dtype=TO_HOST[name])
    if name == "print":
        return NONE
    if name == "range":
        return seq(Val(Kind.HOST, dtype="py:int"))
    if name == "enumerate":
        return seq(seq(None, (Val(Kind.HOST, dtype="py:int"), element(first))))
    if name == "zip":
        return seq(seq(None, tuple(element(v) for _, v in c.args)))
    if name in ("list", "tuple", "set", "frozenset", "sorted", "reversed", "iter"):
        if not c.args:
            return seq(None, () if name in ("list", "tuple") else None)
        if name == "iter" and first.kind in (Kind.LOADER, Kind.SEQ):
            return first
        return seq(element(first))
    if name == "next":
        return element(first)
    if name == "dict":
        if c.args:
            return Val(Kind.SEQ, item=element(first))
        fields = tuple((k, v) for k, (_, v) in c.kwargs.items())
        return Val(Kind.SEQ, fields=fields, item=join_all(v for _, v in fields) if fields else None)
    if name in ("sum", "max", "min", "abs", "pow"):
        return _numeric(c, name)
    if name in ("map", "filter"):
        return seq(element(c.args[1][1]) if name == "filter" and len(c.args) > 1 else UNKNOWN)
    if name == "getattr" and len(c.args) >= 2:
        return _getattr(c)
    if name == "super":
        return _super(c.fr)
    return UNKNOWN


def _numeric(c: Invocation, name: str) -> Val:
    values = [v for _, v in c.args]
    if len(values) == 1 and name in ("sum", "max", "min"):
        return element(values[0])
    c.meet([(e, v) for e, v in c.args if v.tensorish and not v.scalar], f"`{name}()`")
    return join_all(values) if values else HOST


def _getattr(c: Invocation) -> Val:
    from torchport.analyze.flow.exprs import attribute

    key = c.args[1][0]
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        fake = ast.Attribute(value=c.args[0][0], attr=key.value, ctx=ast.Load())
        ast.copy_location(fake, c.node)
        return attribute(c.ip, c.fr, fake, c.args[0][1])
    return UNKNOWN


def _super(fr: Frame) -> Val:
    """``super()`` in a method: the next program class of the lineage, bound to ``self``."""
    cls = fr.cls
    if cls is None or fr.func is None or not fr.func.params:
        return UNKNOWN
    me = fr.env.get(fr.func.params[0].arg, UNKNOWN)
    base = cls.bases[0] if cls.bases else None
    return Val(me.kind, me.origins, ref=base, bound=me)
