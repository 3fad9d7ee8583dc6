"""Static detectors of mixed-precision (AMP) mistakes (TP311-TP315)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector, last_name
from torchport.analyze.checks.values import assigned_value, module_cast_dtype
from torchport.analyze.context import is_self_attr, walk_local
from torchport.analyze.infer import keyword
from torchport.findings import Finding, Fix, Location, Severity
from torchport.rules import amp as R

_CLIPS = ("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_")


def _owners(a: Analysis) -> Iterator[ast.AST]:
    yield a.tree
    yield from a.of_type(ast.FunctionDef, ast.AsyncFunctionDef)


def _scaler_method(a: Analysis, call: ast.Call, name: str) -> bool:
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == name):
        return False
    info = a.info(func.value)
    if info is None:
        # `runner.scaler.scale(loss)` in a callback: a file that makes a GradScaler and an
        # object the program names its scaler
        return (last_name(func.value) or "").lower().endswith("scaler")
    return info.kind == K.SCALER


@detector(R.ClipWithoutUnscale)
def clip_without_unscale(a: Analysis) -> Iterator[Finding]:
    if not a.makes_scaler:
        return
    for owner in _owners(a):
        calls = sorted(
            (n for n in walk_local(owner) if isinstance(n, ast.Call)),
            key=lambda c: (c.lineno, c.col_offset),
        )
        scaled_at = next((c.lineno for c in calls if _scaler_method(a, c, "scale")), None)
        stepped_at = next((c.lineno for c in calls if _scaler_method(a, c, "step")), None)
        if scaled_at is None and stepped_at is None:
            continue
        unscaled = [c.lineno for c in calls if _scaler_method(a, c, "unscale_")]
        for call in calls:
            if a.qualname(call.func) not in _CLIPS and not _reads_gradients(a, call):
                continue
            if scaled_at is not None:
                if call.lineno < scaled_at:
                    continue
                since, evidence = scaled_at, f"`scaler.scale` at line {scaled_at}"
            else:
                # an optimizer-step helper: what `scaler.step` steps after the clip was scaled
                if stepped_at is None or call.lineno > stepped_at:
                    continue
                since, evidence = 0, f"stepped by `scaler.step` at line {stepped_at}"
            if any(since <= line <= call.lineno for line in unscaled):
                continue
            clips = a.qualname(call.func) in _CLIPS
            verb, before = ("clips", "clipping") if clips else ("reads", "reading the gradients")
            yield R.ClipWithoutUnscale.finding(
                f"`{a.name(call)}` {verb} gradients that are still multiplied by the loss scale "
                f"({evidence}): call `scaler.unscale_(optimizer)` first",
                a.loc(call),
                Fix(f"call `scaler.unscale_(optimizer)` before {before}"),
                # a clip of scaled gradients breaks training; a read only logs a wrong number
                severity=None if clips else Severity.WARNING,
            )


def _reads_gradients(a: Analysis, call: ast.Call) -> bool:
    """A same-file helper given ``model.parameters()`` that reads their ``.grad`` (a gradient
    norm for the log): it sees what ``scaler.step`` would unscale."""
    given = any(
        isinstance(arg, ast.Call)
        and isinstance(arg.func, ast.Attribute)
        and arg.func.attr == "parameters"
        for arg in call.args
    )
    func = a.own_callee(call) if given else None
    return func is not None and any(
        isinstance(n, ast.Attribute) and n.attr == "grad" for n in walk_local(func)
    )


def _autocasts(a: Analysis) -> Iterator[tuple[ast.With | ast.AsyncWith, ast.Call]]:
    """Each ``with torch.autocast(...)`` and its call, also ``ctx = torch.autocast(...)``
    made above the loop and entered as ``with ctx:``."""
    for node in a.of_type(ast.With, ast.AsyncWith):
        assert isinstance(node, ast.With | ast.AsyncWith)
        for item in node.items:
            expr: ast.expr | None = item.context_expr
            if isinstance(expr, ast.Name):
                expr = assigned_value(a, expr, expr.lineno)
            if isinstance(expr, ast.IfExp):
                # `nullcontext() if device_type == "cpu" else torch.autocast(...)`
                calls = [e for e in (expr.body, expr.orelse) if isinstance(e, ast.Call)]
                expr = next((c for c in calls if a.qualname(c.func) in K.AUTOCASTS), None)
            if isinstance(expr, ast.Call) and a.qualname(expr.func) in K.AUTOCASTS:
                yield node, expr


def _float16(a: Analysis, cast: ast.Call) -> bool:
    """Whether this autocast computes in float16 (explicitly, or by CUDA's default)."""
    enabled = keyword(cast, "enabled")
    if isinstance(enabled, ast.Constant) and enabled.value is False:
        return False
    dtype = keyword(cast, "dtype")
    if dtype is not None:
        return "float16" in _dtype_options(a, dtype)
    if any(k.arg is None for k in cast.keywords):
        return False  # `**kwargs`: the dtype is not written here
    q = a.qualname(cast.func) or ""
    if q.startswith("torch.cpu."):
        return False
    device = keyword(cast, "device_type") or (cast.args[0] if cast.args else None)
    if q.startswith("torch.cuda."):
        return True
    return not (isinstance(device, ast.Constant) and device.value == "cpu")


def _dtype_options(a: Analysis, dtype: ast.expr) -> set[str]:
    """The dtypes ``dtype`` may name: itself, or through a name, the values of a dict it is
    looked up in (``{"float16": torch.float16, ...}[cfg.dtype]``) or both arms of a choice."""
    if isinstance(dtype, ast.Name):
        dtype = assigned_value(a, dtype, dtype.lineno) or dtype
    if isinstance(dtype, ast.Subscript) and isinstance(dtype.value, ast.Dict):
        options = [v for v in dtype.value.values if v is not None]
    elif isinstance(dtype, ast.IfExp):
        options = [dtype.body, dtype.orelse]
    else:
        options = [dtype]
    names = (K.dtype_name(a.qualname(option)) for option in options)
    return {name for name in names if name is not None}


def _backward_in(owner: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in walk_local(owner)
    )


@detector(R.Float16AutocastWithoutScaler)
def float16_autocast_without_scaler(a: Analysis) -> Iterator[Finding]:
    if a.makes_scaler or "backward" not in a.source:
        return
    for block, cast in _autocasts(a):
        owner = a.function_of(block) or a.tree
        if not _float16(a, cast) or not _backward_in(owner):
            continue
        yield R.Float16AutocastWithoutScaler.finding(
            f"`{a.name(cast)}` trains in float16 and the script has no GradScaler: small "
            "gradients underflow to zero; scale the loss with `torch.amp.GradScaler` or use "
            "`dtype=torch.bfloat16`",
            a.loc(cast),
            Fix("add a GradScaler, or autocast to bfloat16"),
        )


_FLOAT_LAYERS = {
    "Linear",
    "Bilinear",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "LSTM",
    "GRU",
    "RNN",
    "Sequential",
}
_HALF = ("float16", "bfloat16")
_HALF_WORDS = ("half", "float16")  # also matches bfloat16


def _makes_half(a: Analysis) -> bool:
    """``.half()``, ``.bfloat16()`` or a ``torch.float16``/``half``/``bfloat16`` dtype."""
    if not any(word in a.source for word in _HALF_WORDS):
        return False
    if any(a.method_calls("half", "bfloat16")):
        return True
    return any(
        isinstance(n, ast.Attribute) and n.attr in ("float16", "half", "bfloat16")
        for n in a.of_type(ast.Attribute)
    )


@detector(R.HalfInputToFloatLayer)
def half_input_to_float_layer(a: Analysis) -> Iterator[Finding]:
    if not _makes_half(a) or any(a.call_named(*K.AUTOCASTS)):
        return  # no half tensor here; or autocast (perhaps opened by a caller) is used
    for call in a.calls:
        if not call.args or (isinstance(call.func, ast.Attribute) and call.func.attr == "to"):
            continue
        layer = a.callee_module(call)
        if layer is None or layer.cls not in _FLOAT_LAYERS:
            continue
        if layer.dtype is not None or _made_with_dtype(a, call.func):
            continue  # cast with the input: the dtypes agree
        if is_self_attr(call.func) and _casts_a_module(a):
            continue  # `model.to(torch.bfloat16)` also casts the layers its class holds
        arg = a.info(call.args[0])
        if arg is None or arg.kind != K.TENSOR or arg.dtype not in _HALF:
            continue
        yield R.HalfInputToFloatLayer.finding(
            f"`{a.name(call.args[0])}` is {arg.dtype} but `{a.name(call.func)}` "
            f"(nn.{layer.cls}) has float32 weights and no autocast is active: run the "
            f"forward under `torch.autocast(..., dtype=torch.{arg.dtype})`",
            a.loc(call.args[0]),
            Fix("use torch.autocast instead of casting the inputs"),
        )


def _casts_a_module(a: Analysis) -> bool:
    """``.half()``, ``.bfloat16()`` or ``.to(<half dtype>)`` called on a module."""
    casts = a.method_calls("half", "bfloat16", "to")
    return any(module_cast_dtype(a, call) in _HALF for call, _ in casts)


def _made_with_dtype(a: Analysis, func: ast.expr) -> bool:
    """``nn.Linear(8, 2, dtype=torch.float16)``: weights made in a chosen dtype."""
    made = func if isinstance(func, ast.Call) else None
    if isinstance(func, ast.Name):
        bound = assigned_value(a, func, func.lineno)
        made = bound if isinstance(bound, ast.Call) else None
    while made is not None and keyword(made, "dtype") is None:
        inner = made.func.value if isinstance(made.func, ast.Attribute) else None
        made = inner if isinstance(inner, ast.Call) else None  # nn.Linear(...).to(device)
    return made is not None


@detector(R.ScaledLossDiscarded)
def scaled_loss_discarded(a: Analysis) -> Iterator[Finding]:
    for node in a.of_type(ast.Expr):
        assert isinstance(node, ast.Expr)
        call = node.value
        if isinstance(call, ast.Call) and _scaler_method(a, call, "scale"):
            yield R.ScaledLossDiscarded.finding(
                f"`{a.name(call)}` returns the scaled loss and its result is discarded: the "
                "backward pass runs on the unscaled loss; call `.backward()` on the result",
                a.loc(call),
                Fix(f"call `{a.name(call)}.backward()`"),
            )


_FUNCTION_BASES = (
    "torch.autograd.Function",
    "torch.autograd.function.Function",
    "torch.autograd.function.InplaceFunction",
)
# ops autocast runs in float16: their results (and the gradients flowing back into them)
# change dtype, while the tensors a Function saves keep theirs
_MATMULS = frozenset(
    {
        "matmul",
        "mm",
        "bmm",
        "addmm",
        "addmv",
        "addr",
        "baddbmm",
        "addbmm",
        "mv",
        "einsum",
        "linear",
        "bilinear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "chain_matmul",
    }
)


def _decorated(fn: ast.FunctionDef | ast.AsyncFunctionDef, suffix: str) -> ast.expr | None:
    """The ``custom_fwd``/``custom_bwd`` decorator of ``fn``, by its last name: projects
    import it under version shims (``torch.amp`` or ``torch.cuda.amp``) or wrap it in
    ``functools.partial``, which a qualified name would not follow."""
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if (last_name(target) or "").endswith(suffix):
            return deco
    return None


def _multiplies(fn: ast.AST) -> bool:
    for node in walk_local(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return True
        if isinstance(node, ast.Call) and last_name(node.func) in _MATMULS:
            return True
    return False


def _header(a: Analysis, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Location:
    """``def name``: the whole function would cover its body."""
    line, col = a.start(fn)
    return replace(a.loc(fn), end_line=line, end_column=col + len(f"def {fn.name}"))


@detector(R.CustomFunctionWithoutAutocastDecorators)
def custom_function_without_autocast_decorators(a: Analysis) -> Iterator[Finding]:
    if "Function" not in a.source or "backward" not in a.source:
        return
    if not (a.makes_scaler or any(a.call_named(*K.AUTOCASTS))):
        return  # without autocast, forward and backward see the dtypes they were given
    for node in a.of_type(ast.ClassDef):
        assert isinstance(node, ast.ClassDef)
        if not any(a.qualname(base) in _FUNCTION_BASES for base in node.bases):
            continue
        finding = _undecorated(a, node)
        if finding is not None:
            yield finding


def _undecorated(a: Analysis, cls: ast.ClassDef) -> Finding | None:
    forward, backward = a.method(cls, "forward"), a.method(cls, "backward")
    if forward is None or backward is None:
        return None
    if not _multiplies(backward):
        return None  # elementwise ops promote mixed dtypes, and autograd casts the gradients
    if any(isinstance(n, ast.Call) and a.qualname(n.func) in K.AUTOCASTS for n in ast.walk(cls)):
        return None  # the function sets autocast's state itself (e.g. disables it)
    fwd, bwd = _decorated(forward, "custom_fwd"), _decorated(backward, "custom_bwd")
    if fwd is not None and (bwd is not None or _casts_inputs(fwd)):
        return None  # with cast_inputs, forward runs outside autocast, as backward does
    if fwd is None and bwd is not None:
        why = (
            "`backward` has `custom_bwd` but `forward` has no `custom_fwd`, which records the "
            "autocast state `custom_bwd` restores"
        )
    else:
        which = "has no `custom_bwd` on `backward`" if fwd is not None else "has neither decorator"
        why = (
            f"{which}: backward runs outside autocast, so float16 gradients meet the float32 "
            "tensors forward saved"
        )
    products = sorted((n for n in walk_local(backward) if _is_product(n)), key=a.start)
    aligned = [n for n in products if _dtypes_aligned(a, backward, n)]
    if aligned and len(aligned) == len(products):
        return None  # backward casts one factor of every product to the other's dtype itself
    if aligned:
        product = next(n for n in products if n not in aligned)
        return R.CustomFunctionWithoutAutocastDecorators.finding(
            f"`{a.name(product)}` in `{cls.name}.backward` multiplies tensors whose dtypes "
            f"nothing aligns, while backward casts a factor of its other products "
            f"(`{a.name(aligned[0])}`): under autocast the gradient is float16 and forward "
            "saved float32 tensors, and backward runs outside autocast; cast this one too, or "
            'decorate forward with `@torch.amp.custom_fwd(device_type="cuda")` and backward '
            'with `@torch.amp.custom_bwd(device_type="cuda")`',
            a.loc(product),
            Fix("cast a factor to the other's dtype, as the other products of backward do"),
        )
    at = forward if fwd is None else backward
    return R.CustomFunctionWithoutAutocastDecorators.finding(
        f"autograd.Function `{cls.name}` multiplies matrices in backward under autocast and {why}; "
        'decorate forward with `@torch.amp.custom_fwd(device_type="cuda", '
        'cast_inputs=torch.float32)` and backward with `@torch.amp.custom_bwd(device_type="cuda")`',
        _header(a, at),
        Fix("decorate forward with `torch.amp.custom_fwd` and backward with `custom_bwd`"),
    )


def _is_product(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, ast.MatMult)
    return isinstance(node, ast.Call) and last_name(node.func) in _MATMULS


# what leaves a tensor's dtype as it is: views, transposes, indexing
_SAME_DTYPE = frozenset(
    {"t", "T", "mT", "transpose", "permute", "view", "reshape", "contiguous", "unsqueeze",
     "squeeze", "flatten", "expand", "narrow"}
)  # fmt: skip
# products whose two factors are the receiver and the first argument, or the first two
_PAIRS = frozenset({"matmul", "mm", "bmm", "mv", "linear"})


def _factors(a: Analysis, product: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    if isinstance(product, ast.BinOp):
        return product.left, product.right
    assert isinstance(product, ast.Call)
    func = product.func
    if last_name(func) not in _PAIRS:
        return None  # einsum, conv, addmm...: not followed
    if isinstance(func, ast.Attribute) and a.qualname(func) is None and len(product.args) == 1:
        return func.value, product.args[0]  # x.matmul(w)
    return (product.args[0], product.args[1]) if len(product.args) >= 2 else None


def _dtypes_aligned(a: Analysis, fn: ast.AST, product: ast.AST) -> bool:
    """``h @ w.to(h.dtype).t()``, or ``g.t() @ h`` after ``g = (...).to(h.dtype)``: one factor
    is cast to the dtype of the other (or both to one tensor's)."""
    factors = _factors(a, product)
    if factors is None:
        return False
    left, right = factors
    to_left, to_right = _cast_to(a, fn, left), _cast_to(a, fn, right)
    if to_left is not None and to_left in (_held(right), to_right):
        return True
    return to_right is not None and to_right == _held(left)


def _unviewed(expr: ast.expr) -> ast.expr:
    while True:
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Attribute) and expr.attr in _SAME_DTYPE:
            expr = expr.value  # `.T`
        elif (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in _SAME_DTYPE
        ):
            expr = expr.func.value
        else:
            return expr


def _held(expr: ast.expr) -> str | None:
    """The name of the tensor ``expr`` views."""
    base = _unviewed(expr)
    return base.id if isinstance(base, ast.Name) else None


def _cast_to(a: Analysis, fn: ast.AST, expr: ast.expr, follow: bool = True) -> str | None:
    """The tensor whose dtype ``expr`` is cast to: ``x.to(h.dtype)``, ``x.type_as(h)``, or a
    name every assignment of ``fn`` binds to such a cast."""
    base = _unviewed(expr)
    if isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute):
        target = base.args[0] if base.args else keyword(base, "dtype")
        if base.func.attr == "type_as" and target is not None:
            return _held(target)
        if base.func.attr == "to" and isinstance(target, ast.Attribute) and target.attr == "dtype":
            return _held(target.value)
        return None
    if not (follow and isinstance(base, ast.Name)):
        return None
    values = [value for _, value in a.assignments(fn).get(base.id, [])]
    found = {_cast_to(a, fn, value, follow=False) for value in values}
    return found.pop() if len(found) == 1 and None not in found else None


def _casts_inputs(deco: ast.expr) -> bool:
    return isinstance(deco, ast.Call) and keyword(deco, "cast_inputs") is not None


@detector(R.AutocastOnHostOnly)
def autocast_on_host_only(a: Analysis) -> Iterator[Finding]:
    if "autocast" not in a.source or not a.uses_accelerator:
        return
    for cast in a.call_named(*K.AUTOCASTS):
        if not _host_only(a, cast) or not _meets_device(a, cast):
            continue
        if _after_device_branch(a, cast):
            continue
        yield R.AutocastOnHostOnly.finding(
            f"`{a.name(cast)}` casts only CPU ops, while this file moves its work to an "
            "accelerator: on the GPU the region runs in float32; use the device's type "
            "(`device_type=device.type`)",
            a.loc(cast),
            Fix("autocast for the device the model runs on: `device_type=device.type`"),
        )


def _after_device_branch(a: Analysis, cast: ast.Call) -> bool:
    """``if torch.device(d).type == "cuda": return torch.autocast("cuda", ...)`` above, or
    an ``else`` arm of such a test: the CPU autocast is the host's fallback."""
    func = a.function_of(cast)
    if func is None:
        return False
    for node in walk_local(func):
        if not isinstance(node, ast.If) or "cuda" not in a.text(node.test):
            continue
        in_else = any(cast in set(ast.walk(stmt)) for stmt in node.orelse)
        returns_above = (
            node.lineno < cast.lineno
            and bool(node.body)
            and isinstance(node.body[-1], ast.Return)
            and not any(cast in set(ast.walk(stmt)) for stmt in node.body)
        )
        if in_else or returns_above:
            return True
    return False


def _host_only(a: Analysis, cast: ast.Call) -> bool:
    """``torch.cpu.amp.autocast(...)``, or a ``device_type`` given as the literal "cpu"."""
    if (a.qualname(cast.func) or "").startswith("torch.cpu."):
        return True
    if (a.qualname(cast.func) or "").startswith("torch.cuda."):
        return False
    device = keyword(cast, "device_type") or (cast.args[0] if cast.args else None)
    return isinstance(device, ast.Constant) and device.value == "cpu"


def _meets_device(a: Analysis, cast: ast.Call) -> bool:
    """Whether the region works on the device: its ``with`` body uses a model or tensor on an
    accelerator. A context made elsewhere (``return torch.autocast("cpu")``) is judged by
    the file alone."""
    item = a.parents.get(cast)  # a withitem, whose parent is the With
    block = a.parents.get(item) if item is not None else None
    if not isinstance(block, ast.With | ast.AsyncWith):
        return True
    for stmt in block.body:
        for node in walk_local(stmt):
            if isinstance(node, ast.Name | ast.Attribute | ast.Call):
                info = a.info(node)
                if info is not None and info.device == "accel":
                    return True
    return False
