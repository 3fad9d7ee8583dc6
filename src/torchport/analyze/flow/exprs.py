"""Expressions: names, attributes, subscripts, operators and displays (calls: :mod:`calls`)."""

from __future__ import annotations

import ast
from dataclasses import replace

from torchport.analyze import kinds as K
from torchport.analyze.flow.interp import Frame, Interp
from torchport.analyze.flow.program import ClassInfo
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
    join,
    join_all,
    map_elements,
    seq,
    tensor,
)

# Attributes of a tensor that are the tensor itself (or lives where it does).
SAME_TENSOR = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
HOST_ATTRIBUTES = frozenset(
    {"shape", "dtype", "ndim", "is_cuda", "requires_grad", "layout", "names", "is_leaf",
     "is_sparse", "itemsize", "nbytes", "grad_fn"}
)  # fmt: skip
MODULE_TENSORS = frozenset(
    {"weight", "bias", "running_mean", "running_var", "weight_ih_l0", "weight_hh_l0",
     "bias_ih_l0", "bias_hh_l0", "in_proj_weight", "in_proj_bias", "pe"}
)  # fmt: skip
DEVICE_LITERALS = ("cuda", "mps", "xpu", "npu", "hpu", "cpu", "meta")
_LONGEST_DEVICE = 32  # "cuda:0" with room for a large index and stray spaces
OPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
    ast.LShift: "<<", ast.RShift: ">>",
}  # fmt: skip


def evaluate(ip: Interp, fr: Frame, expr: ast.expr) -> Val:
    value = _evaluate(ip, fr, expr)
    moved = ip.overrides.get(id(expr))
    if moved is not None:
        ip.events.before[id(expr)] = value
        value = moved_to(value, moved)
    ip.events.values[id(expr)] = value
    return value


def moved_to(value: Val, origin: Origin, depth: int = 4) -> Val:
    """``value`` after the port moves it (every tensor in it now comes from ``origin``)."""
    if value.tensorish or value.kind is Kind.MODULE:
        return replace(value, origins=frozenset([origin]), _key=None)
    if value.kind is Kind.SEQ and depth > 0:
        mapped = map_elements(value, lambda v: moved_to(v, origin, depth - 1))
        return replace(value, **mapped, _key=None)
    return value


def _evaluate(ip: Interp, fr: Frame, expr: ast.expr) -> Val:
    if isinstance(expr, ast.Name):
        return ip.name_value(fr, expr.id)
    if isinstance(expr, ast.Constant):
        return _constant(ip, fr, expr)
    if isinstance(expr, ast.Call):
        from torchport.analyze.flow.calls import call

        return call(ip, fr, expr)
    if isinstance(expr, ast.Attribute):
        return attribute(ip, fr, expr, evaluate(ip, fr, expr.value))
    if isinstance(expr, ast.Subscript):
        return _subscript(ip, fr, expr)
    if isinstance(expr, ast.BinOp):
        left, right = evaluate(ip, fr, expr.left), evaluate(ip, fr, expr.right)
        return binop(ip, fr, expr, (expr.left, left), (expr.right, right), op=expr.op)
    if isinstance(expr, ast.Compare):
        return _compare(ip, fr, expr)
    if isinstance(expr, ast.UnaryOp):
        operand = evaluate(ip, fr, expr.operand)
        return HOST if isinstance(expr.op, ast.Not) else operand
    if isinstance(expr, ast.BoolOp):
        return join_all(evaluate(ip, fr, v) for v in expr.values)
    if isinstance(expr, ast.IfExp):
        evaluate(ip, fr, expr.test)
        return join(evaluate(ip, fr, expr.body), evaluate(ip, fr, expr.orelse))
    if isinstance(expr, ast.Tuple | ast.List | ast.Set):
        return _display(ip, fr, expr)
    if isinstance(expr, ast.Dict):
        return _dict(ip, fr, expr)
    if isinstance(expr, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        return _comprehension(ip, fr, expr)
    if isinstance(expr, ast.JoinedStr):
        return _joined_str(ip, fr, expr)
    if isinstance(expr, ast.FormattedValue):
        evaluate(ip, fr, expr.value)
        return HOST
    if isinstance(expr, ast.Lambda):
        return Val(Kind.FUNC, ref=ip.nested_func(expr, fr))
    if isinstance(expr, ast.Starred):
        return evaluate(ip, fr, expr.value)
    if isinstance(expr, ast.NamedExpr):
        value = evaluate(ip, fr, expr.value)
        fr.env[expr.target.id] = value
        return value
    if isinstance(expr, ast.Slice):
        for part in (expr.lower, expr.upper, expr.step):
            if part is not None:
                evaluate(ip, fr, part)
        return HOST
    if isinstance(expr, ast.Yield | ast.YieldFrom):
        if expr.value is not None:
            value = evaluate(ip, fr, expr.value)
            fr.yields.append(element(value) if isinstance(expr, ast.YieldFrom) else value)
        return UNKNOWN
    if isinstance(expr, ast.Await):
        evaluate(ip, fr, expr.value)
    return UNKNOWN


def device_place(text: str) -> Place | None:
    """Where a device string points (``"cuda:0"`` -> DEVICE, ``"cpu"`` -> HOST), if it is one."""
    if len(text) > _LONGEST_DEVICE:
        return None  # a docstring: not copied to be split, stripped and lowered
    head = text.split(":", maxsplit=1)[0].strip().lower()
    if head not in DEVICE_LITERALS:
        return None
    return Place.HOST if head == "cpu" else Place.DEVICE


def _constant(ip: Interp, fr: Frame, expr: ast.Constant) -> Val:
    if expr.value is None:
        return NONE
    if isinstance(expr.value, str):
        place = device_place(expr.value)
        if place is not None:
            made = ip.origin(OKind.MOVE, expr, fr, place, f'"{expr.value}"')
            return Val(Kind.HOST, frozenset([made]))
        return Val(Kind.HOST, dtype="py:str")
    if isinstance(expr.value, bool):
        return Val(Kind.HOST, dtype="py:bool")
    if isinstance(expr.value, int | float):
        return Val(Kind.HOST, dtype="py:int" if isinstance(expr.value, int) else "py:float")
    return HOST


def _joined_str(ip: Interp, fr: Frame, expr: ast.JoinedStr) -> Val:
    for part in expr.values:
        evaluate(ip, fr, part)
    first = expr.values[0] if expr.values else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        place = device_place(first.value)
        if place is not None:
            return Val(
                Kind.HOST, frozenset([ip.origin(OKind.MOVE, expr, fr, place, "an f-string device")])
            )
    return HOST


def attribute(ip: Interp, fr: Frame, expr: ast.Attribute, base: Val) -> Val:
    name = expr.attr
    if base.kind is Kind.QUAL and base.qual is not None:
        dotted = K.canonical(f"{base.qual}.{name}")
        symbol = ip.program.lookup(dotted, fr.unit)
        return ip.function_value(symbol) if symbol is not None else Val(Kind.QUAL, qual=dotted)
    if base.kind is Kind.TENSOR:
        if name in SAME_TENSOR:
            return replace(base, qual=None, _key=None)
        if name == "device":
            return Val(Kind.DEVICE, base.origins)
        return HOST if name in HOST_ATTRIBUTES else UNKNOWN
    if isinstance(base.ref, ClassInfo) and base.kind in (Kind.MODULE, Kind.OBJECT, Kind.DATASET):
        return _program_attribute(ip, base, base.ref, name)
    if base.kind is Kind.CLASS and isinstance(base.ref, ClassInfo):
        method = base.ref.method(name)
        if method is not None:
            return Val(Kind.FUNC, ref=method)
        return base.ref.attr(name) or UNKNOWN
    if base.kind is Kind.MODULE:
        if name == "device":
            return Val(Kind.DEVICE, base.origins)
        if name in MODULE_TENSORS:
            return tensor(base.origins)
        if name in ("training",):
            return HOST
        return Val(Kind.MODULE, base.origins, qual=None)
    if base.kind is Kind.LOADER:
        if name == "dataset":
            return Val(Kind.DATASET, item=base.item)
        return Val(Kind.SAMPLER) if name in ("sampler", "batch_sampler") else HOST
    if base.kind is Kind.DIST:
        return tensor(base.origins)
    if base.kind is Kind.DEVICE:
        return HOST
    if base.kind in (Kind.UNKNOWN, Kind.SEQ) and base.origins:
        return Val(Kind.UNKNOWN, base.origins)
    if base.kind is Kind.HOST:
        return HOST
    return UNKNOWN


def _program_attribute(ip: Interp, base: Val, cls: ClassInfo, name: str) -> Val:
    method = cls.method(name)
    if method is not None:
        return Val(Kind.FUNC, ref=method, bound=base)
    found = cls.attr(name)
    if found is not None:
        return found
    if name == "device" and cls.is_module:
        return Val(Kind.DEVICE, base.origins)
    return UNKNOWN


def _subscript(ip: Interp, fr: Frame, expr: ast.Subscript) -> Val:
    base = evaluate(ip, fr, expr.value)
    index = evaluate(ip, fr, expr.slice)
    key = expr.slice
    if base.kind is Kind.TENSOR:
        if index.tensorish and not index.scalar:
            ip.meet(fr, expr, [(expr.value, base), (expr.slice, index)], "indexing", index=True)
        return tensor(base.origins, dtype=base.dtype)
    if base.kind is Kind.SEQ:
        if isinstance(key, ast.Constant):
            if (
                isinstance(key.value, int)
                and base.parts is not None
                and -len(base.parts) <= key.value < len(base.parts)
            ):
                return base.parts[key.value]
            if isinstance(key.value, str) and base.fields is not None:
                found = dict(base.fields).get(key.value)
                if found is not None:
                    return found
        if isinstance(key, ast.Slice):
            return replace(base, parts=None, _key=None) if base.parts is not None else base
        return element(base)
    if base.kind in (Kind.NDARRAY, Kind.DATASET):
        return base if base.kind is Kind.NDARRAY else (base.item or UNKNOWN)
    if base.kind is Kind.MODULE:  # nn.Sequential / ModuleList indexing
        return base.item if base.item is not None else Val(Kind.MODULE, base.origins)
    if base.kind is Kind.UNKNOWN and base.origins:
        return Val(Kind.UNKNOWN, base.origins)
    if base.kind is Kind.HOST:
        return HOST
    return UNKNOWN


def binop(
    ip: Interp,
    fr: Frame,
    node: ast.AST,
    left: tuple[ast.expr, Val],
    right: tuple[ast.expr, Val],
    *,
    op: ast.operator | ast.cmpop,
) -> Val:
    """``a <op> b``: tensors on both sides must share a device (a 0-dim one need not)."""
    a, b = left[1], right[1]
    if a.tensorish or b.tensorish:
        if a.tensorish and b.tensorish and not (a.scalar or b.scalar):
            symbol = OPS.get(type(op)) if isinstance(op, ast.operator) else None
            ip.meet(fr, node, [left, right], f"`{symbol}`" if symbol else "a comparison")
        origins = (a.origins if a.tensorish else frozenset()) | (
            b.origins if b.tensorish else frozenset()
        )
        scalar = (a.scalar or not a.tensorish) and (b.scalar or not b.tensorish)
        return tensor(origins, scalar=scalar, dtype=a.dtype or b.dtype)
    if Kind.NDARRAY in (a.kind, b.kind):
        return Val(Kind.NDARRAY, dtype=a.dtype or b.dtype)
    if a.kind is Kind.SEQ and b.kind is Kind.SEQ:
        return join(replace(a, parts=None, _key=None), replace(b, parts=None, _key=None))
    if a.kind is Kind.HOST and b.kind is Kind.HOST:
        return HOST
    return UNKNOWN


def _compare(ip: Interp, fr: Frame, expr: ast.Compare) -> Val:
    left_expr, left = expr.left, evaluate(ip, fr, expr.left)
    result: Val = HOST
    for op, right_expr in zip(expr.ops, expr.comparators, strict=True):
        right = evaluate(ip, fr, right_expr)
        if not isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn):
            out = binop(ip, fr, expr, (left_expr, left), (right_expr, right), op=op)
            if out.kind is Kind.TENSOR:
                result = replace(out, dtype="bool", _key=None)
        left_expr, left = right_expr, right
    return result


def _display(ip: Interp, fr: Frame, expr: ast.Tuple | ast.List | ast.Set) -> Val:
    values = [evaluate(ip, fr, e) for e in expr.elts]
    if any(isinstance(e, ast.Starred) for e in expr.elts):
        inner = join_all(
            element(v) if isinstance(e, ast.Starred) else v
            for e, v in zip(expr.elts, values, strict=True)
        )
        return seq(inner)
    parts = tuple(values) if not isinstance(expr, ast.Set) else None
    return seq(join_all(values) if values else None, parts)


def _dict(ip: Interp, fr: Frame, expr: ast.Dict) -> Val:
    fields: list[tuple[str, Val]] = []
    others: list[Val] = []
    for key, value_expr in zip(expr.keys, expr.values, strict=True):
        value = evaluate(ip, fr, value_expr)
        if key is None:
            others.append(element(value))
            continue
        evaluate(ip, fr, key)
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            fields.append((key.value, value))
        else:
            others.append(value)
    everything = [v for _, v in fields] + others
    return Val(
        Kind.SEQ,
        fields=tuple(fields) if not others else None,
        item=join_all(everything) if everything else None,
    )


def _comprehension(
    ip: Interp, fr: Frame, expr: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
) -> Val:
    from torchport.analyze.flow.stmts import bind

    saved = fr.env
    fr.env = dict(saved)
    try:
        for gen in expr.generators:
            item = element(evaluate(ip, fr, gen.iter))
            bind(ip, fr, gen.target, item, gen)
            for condition in gen.ifs:
                evaluate(ip, fr, condition)
        if isinstance(expr, ast.DictComp):
            evaluate(ip, fr, expr.key)
            return seq(evaluate(ip, fr, expr.value))
        return seq(evaluate(ip, fr, expr.elt))
    finally:
        fr.env = saved
