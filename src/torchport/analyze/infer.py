"""Expression inference: what a call, name or attribute evaluates to (see context.Scope)."""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING

from torchport.analyze import kinds as K
from torchport.analyze.kinds import Info
from torchport.analyze.walk import descendants

if TYPE_CHECKING:
    from torchport.analyze.scope import Scope


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def has_star_kwargs(call: ast.Call) -> bool:
    return any(kw.arg is None for kw in call.keywords)


def infer(scope: Scope, expr: ast.expr, line: int) -> Info | None:
    if isinstance(expr, ast.Name):
        if expr.id == "self":
            return None
        return scope.lookup(expr.id, line)
    if isinstance(expr, ast.Call):
        return _call(scope, expr, line)
    if isinstance(expr, ast.Attribute):
        return _attribute(scope, expr, line)
    if isinstance(expr, ast.Subscript):
        base = infer(scope, expr.value, line)
        if base is not None and base.kind in (K.TENSOR, K.NDARRAY):
            return base
        return None
    if isinstance(expr, ast.BinOp):
        left, right = infer(scope, expr.left, line), infer(scope, expr.right, line)
        for side, other in ((left, right), (right, left)):
            same = other is None or (side is not None and other.kind == side.kind)
            if side is not None and side.kind in (K.TENSOR, K.NDARRAY) and same:
                return _divided(side) if isinstance(expr.op, ast.Div) else side
        return None
    if isinstance(expr, ast.UnaryOp):
        return infer(scope, expr.operand, line)
    if isinstance(expr, ast.Compare):
        return _comparison(scope, expr, line)
    return None


def _divided(side: Info) -> Info:
    """``a / b`` of integer tensors is a floating one (of unknown width)."""
    if side.dtype is not None and not side.dtype.startswith(("float", "bfloat", "complex")):
        return replace(side, dtype=None)
    return side


def _comparison(scope: Scope, expr: ast.Compare, line: int) -> Info | None:
    """``a < b`` with a tensor operand is a bool tensor where that operand lives."""
    sides = [infer(scope, side, line) for side in (expr.left, *expr.comparators)]
    tensors = [s for s in sides if s is not None and s.kind == K.TENSOR]
    if not tensors:
        return None
    where = next((s for s in tensors if s.device == "accel"), tensors[0])
    return replace(where, dtype="bool", cls=None, batch=False)


def device_of(scope: Scope, expr: ast.expr | None, line: int) -> str | None:
    """``cpu``/``accel`` for an expression used as a device; None when it is not one."""
    if expr is None:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        kind = expr.value.split(":")[0]
        if kind == "cpu":
            return "cpu"
        return "accel" if kind in ("cuda", "mps", "xpu", "npu", "hpu", "meta") else None
    if isinstance(expr, ast.Call) and scope.ctx.qualname(expr.func) == "torch.device" and expr.args:
        return device_of(scope, expr.args[0], line) or "accel"
    info = infer(scope, expr, line)
    if info is not None and info.kind == K.DEVICE:
        # `x.device` is wherever x is; a device the script picked may be an accelerator
        return info.device if info.origin == OF_VALUE else info.device or "accel"
    if info is None and _names_a_device(expr):
        return "accel"
    return None


OF_VALUE = "the device of a value"  # the origin of ``x.device``: wherever x is
_HOLDERS = ("self", "args", "cfg", "config", "opt", "opts", "hparams", "settings")


def _names_a_device(expr: ast.expr) -> bool:
    """``device``, ``dev``, ``self.device``, ``args.device``: a device the script chose."""
    if isinstance(expr, ast.Name):
        return "device" in expr.id.lower() or expr.id in ("dev", "dev_id")
    if isinstance(expr, ast.Attribute) and "device" in expr.attr.lower():
        return isinstance(expr.value, ast.Name) and expr.value.id in _HOLDERS
    return False


def _attribute(scope: Scope, expr: ast.Attribute, line: int) -> Info | None:
    value = expr.value
    if isinstance(value, ast.Name) and value.id == "self" and scope.cls is not None:
        return scope.ctx.self_attr(scope.cls, expr.attr)
    base = infer(scope, value, line)
    if base is None:
        return None
    if base.kind == K.TENSOR and expr.attr in ("T", "data", "mT", "grad", "real"):
        return base
    if base.kind in (K.TENSOR, K.MODULE) and expr.attr == "device":
        return Info(K.DEVICE, device=base.device, origin=OF_VALUE)
    return None


def _call(scope: Scope, call: ast.Call, line: int) -> Info | None:
    ctx = scope.ctx
    q = ctx.qualname(call.func)
    if q is not None:
        found = _qualified_call(scope, call, q, line)
        if found is not None:
            return found
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in ctx.module_classes:
            return Info(K.MODULE, device="cpu", cls=func.id, origin=f"`{func.id}()`")
        if func.id in ctx.dataset_classes:
            return Info(K.DATASET, cls=func.id)
        if func.id in ctx.functions and q is None:
            return ctx.returns(ctx.functions[func.id])
    if isinstance(func, ast.Attribute):
        found = _method_call(scope, call, func, line)
        if found is not None:
            return found
    callee = infer(scope, func, line)
    if callee is not None and callee.kind == K.MODULE:
        if callee.cls is not None and callee.cls.endswith("Loss"):
            # a loss has no weights: its output lives where its inputs do
            return Info(K.TENSOR, cls=callee.cls)
        return Info(K.TENSOR, device=callee.device, target=callee.target, cls=callee.cls)
    return None


_DRAWN_FROM_INPUT = {"torch.multinomial", "torch.bernoulli", "torch.normal"}


def _factory(scope: Scope, call: ast.Call, q: str, line: int) -> Info:
    dtype = K.dtype_name(_dtype_text(scope, keyword(call, "dtype")))
    if dtype is None and q in K.INT_FACTORIES:
        dtype = "int64"
    elif dtype is None and q in ("torch.tensor", "torch.as_tensor") and call.args:
        arg = infer(scope, call.args[0], line)
        dtype = (
            arg.dtype if arg is not None and arg.kind == K.NDARRAY else _literal_dtype(call.args[0])
        )
    dev_expr = keyword(call, "device")
    device = "cpu" if dev_expr is None else device_of(scope, dev_expr, line)
    target = None if dev_expr is None else scope.ctx.text(dev_expr)
    if dev_expr is None and q in _DRAWN_FROM_INPUT and call.args:
        # ``torch.multinomial(probs, 1)``, ``torch.normal(mean, std)``: where the input is
        # (``torch.normal(0.0, 1.0, size)`` of numbers is a factory of the host)
        given = infer(scope, call.args[0], line)
        tensor = given if given is not None and given.kind == K.TENSOR else None
        if tensor is not None or q != "torch.normal":
            device = tensor.device if tensor is not None else None
            target = tensor.target if tensor is not None else None
    name = q.rsplit(".", maxsplit=1)[-1]
    return Info(
        K.TENSOR,
        dtype=dtype,
        device=device,
        target=target,
        origin=f"torch.{name} (line {call.lineno})",
    )


def _qualified_call(scope: Scope, call: ast.Call, q: str, line: int) -> Info | None:
    if q in K.FACTORIES:
        return _factory(scope, call, q, line)
    if q == "torch.from_numpy" and call.args:
        arg = infer(scope, call.args[0], line)
        dtype = arg.dtype if arg is not None and arg.kind == K.NDARRAY else None
        return Info(
            K.TENSOR, dtype=dtype, device="cpu", origin=f"torch.from_numpy (line {call.lineno})"
        )
    if q == "torch.nn.functional.one_hot" and call.args:
        indices = infer(scope, call.args[0], line)
        device = indices.device if indices is not None and indices.kind == K.TENSOR else None
        return Info(K.TENSOR, dtype="int64", device=device)
    if q in K.TENSOR_OPS or q.startswith("torch.nn.functional."):
        devices = [infer(scope, a, line) for a in call.args[:2]]
        accel = next((d for d in devices if d is not None and d.device == "accel"), None)
        if accel is None and devices and all(_made_on_host(d) for d in devices):
            # ``torch.triu(torch.ones(n, n))``: an op of host tensors made here stays there
            first = devices[0]
            assert first is not None
            return Info(K.TENSOR, device="cpu", origin=first.origin)
        return Info(
            K.TENSOR, device="accel" if accel else None, target=accel.target if accel else None
        )
    if q == "torch.device":
        return Info(K.DEVICE, device=device_of(scope, call.args[0], line) if call.args else None)
    if q == "torch.utils.data.DataLoader":
        return Info(K.LOADER, origin=f"DataLoader (line {call.lineno})")
    if q == "torch.utils.data.DistributedSampler":
        return Info(K.SAMPLER)
    if q in K.GRAD_SCALERS:
        return Info(K.SCALER)
    if q == "torch.nn.Parameter":
        return Info(K.TENSOR, cls="Parameter")
    parts = q.split(".")
    if q.startswith("torch.nn.") and parts[-1][:1].isupper() and parts[2] != "functional":
        return Info(K.MODULE, device="cpu", cls=parts[-1], origin=f"`{parts[-1]}`")
    if q.startswith("torch.optim.") and parts[-1][:1].isupper() and "lr_scheduler" not in parts:
        return Info(K.OPTIMIZER)  # not torch.optim.lr_scheduler.X: a scheduler's step is its own
    if q.startswith("numpy."):
        return _numpy(scope, call, q, line)
    return None


def _made_on_host(info: Info | None) -> bool:
    return info is not None and info.kind == K.TENSOR and info.device == "cpu" and bool(info.origin)


def _numpy(scope: Scope, call: ast.Call, q: str, line: int) -> Info | None:
    dtype_kw = keyword(call, "dtype")
    explicit = K.dtype_name(_dtype_text(scope, dtype_kw)) if dtype_kw is not None else None
    if dtype_kw is not None:
        return Info(K.NDARRAY, dtype=explicit)
    origin = f"{q.replace('numpy.', 'np.')} (line {call.lineno})"
    if q == "numpy.random.default_rng":
        return Info(K.RNG)
    if q in K.NUMPY_FLOAT64:
        return Info(K.NDARRAY, dtype="float64", origin=origin)
    if q == "numpy.random.randint":
        return Info(K.NDARRAY, dtype="int64", origin=origin)
    if q in ("numpy.array", "numpy.asarray") and call.args:
        return Info(K.NDARRAY, dtype=_literal_dtype(call.args[0], numpy=True), origin=origin)
    if q == "numpy.arange" and call.args:
        floats = any(isinstance(a, ast.Constant) and isinstance(a.value, float) for a in call.args)
        return Info(K.NDARRAY, dtype="float64" if floats else None, origin=origin)
    return None


def _literal_dtype(node: ast.expr, numpy: bool = False) -> str | None:
    """float64 (NumPy) / float32 (torch) or int64 for a literal list of numbers."""
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    values = [n.value for n in descendants(node) if isinstance(n, ast.Constant)]
    others = [
        n
        for n in descendants(node)
        if not isinstance(n, ast.Constant | ast.List | ast.Tuple | ast.UnaryOp)
    ]
    if not values or others or not all(type(v) in (int, float) for v in values):
        return None
    if any(isinstance(v, float) for v in values):
        return "float64" if numpy else "float32"
    return "int64"


def _dtype_text(scope: Scope, expr: ast.expr | None) -> str | None:
    if expr is None:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    return scope.ctx.qualname(expr)


def _method_call(scope: Scope, call: ast.Call, func: ast.Attribute, line: int) -> Info | None:
    value, m = func.value, func.attr
    if isinstance(value, ast.Name) and value.id == "self" and scope.cls is not None:
        method = scope.ctx.method(scope.cls, m)
        return None if method is None else scope.ctx.returns(method)
    recv = infer(scope, value, line)
    if recv is None:
        return None
    if recv.kind == K.TENSOR:
        return _tensor_method(scope, call, recv, m, line)
    if recv.kind == K.MODULE and m in K.MODULE_IN_PLACE:
        return moved(scope, call, recv, m, line)
    if recv.kind == K.RNG:
        if m in K.RNG_FLOAT64:
            return Info(K.NDARRAY, dtype="float64", origin=f"rng.{m} (line {call.lineno})")
        return Info(K.NDARRAY, dtype="int64") if m == "integers" else None
    if recv.kind == K.NDARRAY:
        if m == "astype" and call.args:
            return Info(K.NDARRAY, dtype=K.dtype_name(_dtype_text(scope, call.args[0])))
        return recv if m in ("copy", "reshape", "squeeze", "transpose") else None
    return None


def _tensor_method(scope: Scope, call: ast.Call, recv: Info, m: str, line: int) -> Info | None:
    if m in K.DEVICE_MOVES or m in K.DTYPE_CASTS:
        return moved(scope, call, recv, m, line)
    if m in K.TENSOR_METHODS:
        return replace(recv, cls=None)
    if m == "numpy":
        return Info(K.NDARRAY, dtype=recv.dtype)
    return None


def moved(scope: Scope, call: ast.Call, recv: Info, m: str, line: int) -> Info:
    """The value after ``.to()``/``.cuda()``/``.cpu()``/a cast (a module is moved in place)."""
    ctx, info = scope.ctx, recv
    if m in K.DTYPE_CASTS:
        return replace(info, dtype=K.DTYPE_CASTS[m])
    if m == "cuda":
        return replace(info, device="accel", target=None)
    if m == "cpu":
        return replace(info, device="cpu", target=None)
    if m != "to":
        return info
    target = keyword(call, "device") or (call.args[0] if call.args else None)
    dtype = keyword(call, "dtype")
    if dtype is None and call.args:
        dtype = call.args[0] if K.dtype_name(_dtype_text(scope, call.args[0])) else None
        if len(call.args) > 1 and target is call.args[0]:
            dtype = call.args[1]
    if dtype is not None:
        info = replace(info, dtype=K.dtype_name(_dtype_text(scope, dtype)) or info.dtype)
        if target is dtype:
            return info
    device = device_of(scope, target, line)
    if device is None:
        return replace(info, device=None, target=None)
    return replace(info, device=device, target=ctx.text(target) if target is not None else None)
