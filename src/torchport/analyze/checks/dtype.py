"""Static detectors of dtype, precision and AMP mistakes (TP3xx)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.checks.values import (
    assigned_name,
    assigned_value,
    dtype_of,
    module_cast_dtype,
)
from torchport.analyze.context import is_self_attr, walk_local
from torchport.analyze.edits import (
    add_first_argument,
    add_keyword,
    ensure_import,
    insert_at,
    replace_node,
)
from torchport.analyze.infer import keyword
from torchport.analyze.walk import descendants
from torchport.findings import Edit, Finding, Fix, Safety, Severity
from torchport.rules import dtype as R

_TO_TENSOR = ("torch.from_numpy", "torch.tensor", "torch.as_tensor")
_CASTS = ("float", "half", "bfloat16", "to", "type")


@detector(R.NumpyFloat64ToTensor)
def numpy_float64_to_tensor(a: Analysis) -> Iterator[Finding]:
    for call in a.call_named(*_TO_TENSOR):
        if not call.args or keyword(call, "dtype") is not None:
            continue
        arg = a.info(call.args[0])
        if arg is None or arg.kind != K.NDARRAY or arg.dtype != "float64":
            continue
        parent = a.parents.get(call)
        if isinstance(parent, ast.Attribute) and _casts(a, parent):
            continue
        if _cast_later(a, call):
            continue
        origin = f" (from {arg.origin})" if arg.origin else ""
        yield R.NumpyFloat64ToTensor.finding(
            f"`{a.name(call)}` makes a float64 tensor from NumPy data{origin}: models expect "
            "float32; add `.float()` (or `dtype=torch.float32`)",
            a.loc(call),
            Fix(
                "cast to float32: `.float()`", (insert_at(a.end(call), ".float()"),), Safety.UNSAFE
            ),
        )


def _cast_later(a: Analysis, call: ast.Call) -> bool:
    """The tensor is assigned to a name that is cast to float32 later in the same function."""
    target = assigned_name(a, call)
    if target is None:
        return False
    owner = a.function_of(call) or a.tree
    return any(
        isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == target.id
        and n.lineno > target.lineno
        and _casts(a, n)
        for n in walk_local(owner)
    )


def _casts(a: Analysis, method: ast.Attribute) -> bool:
    """``x.float()``, ``x.type(...)``, or a ``x.to(...)`` that is given a dtype."""
    if method.attr not in _CASTS:
        return False
    if method.attr != "to":
        return True
    call = a.parents.get(method)
    if not isinstance(call, ast.Call) or call.func is not method:
        return False
    if keyword(call, "dtype") is not None:
        return True
    return any(K.dtype_name(a.qualname(arg)) is not None for arg in call.args)


@detector(R.Float64OnAccelerator)
def float64_on_accelerator(a: Analysis) -> Iterator[Finding]:
    if not a.uses_accelerator:
        return
    # Judged per function: a test helper using float64 for gradcheck in a file that also
    # has GPU code elsewhere is not "code that runs on an accelerator".
    accelerated = {a.function_of(call) for call, _ in a.device_moves}
    for call, func in a.method_calls("double"):
        info = a.info(func.value)
        if call.args or info is None or info.kind not in (K.TENSOR, K.MODULE):
            continue
        if _in_metric(a, call):
            continue
        if info.device == "accel" or a.function_of(call) in accelerated:
            yield _f64(a, call, f"`{a.name(call)}`")
    for call in a.calls:
        dtype = keyword(call, "dtype")
        if dtype is None or a.qualname(dtype) not in ("torch.float64", "torch.double"):
            continue
        if _in_metric(a, call):
            continue
        info = a.info(call)
        on_device = info is not None and info.device == "accel"
        if on_device or a.function_of(call) in accelerated:
            # a 0-dim float64 running sum (`torch.zeros((), dtype=torch.float64)`), or a few
            # statistics sent in one tensor, cost nothing and keep precision: a suggestion
            small = Severity.INFO if _zero_dim(call) or _few_numbers(a, call) else None
            yield _f64(a, dtype, f"`dtype={a.text(dtype)}` in `{a.name(call)}`", small)
    # every float tensor the program makes, the model's parameters included, is float64
    for call in a.call_named("torch.set_default_dtype"):
        if call.args and a.qualname(call.args[0]) in ("torch.float64", "torch.double"):
            yield R.Float64OnAccelerator.finding(
                f"`{a.name(call)}` makes every float tensor of this program float64, the "
                "model's included, in a file that runs on an accelerator, where float64 is many "
                "times slower (and unsupported on MPS): keep float32 as the default",
                a.loc(call),
                Fix("remove the call; ask for float64 only where it is needed"),
            )


def _in_metric(a: Analysis, node: ast.AST) -> bool:
    """Inside a metric's class (``update`` and ``compute``, or a ``…Metric``/``…Meter``):
    float64 sums there are chosen for precision, a few numbers per step."""
    cls = a.class_of(a.function_of(node) or a.tree)
    if cls is None:
        return False
    methods = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
    computes = any(m.startswith("compute") for m in methods)  # compute, compute_iou...
    return ("update" in methods and computes) or cls.name.endswith(("Metric", "Meter"))


def _zero_dim(call: ast.Call) -> bool:
    """A factory given the empty shape: ``torch.zeros(())``, ``torch.zeros([])``."""
    first = call.args[0] if call.args else None
    return isinstance(first, ast.Tuple | ast.List) and not first.elts


def _few_numbers(a: Analysis, call: ast.Call) -> bool:
    """``torch.tensor([count, mean, m2], ...)``: a handful of scalars written out."""
    first = call.args[0] if call.args else None
    if a.qualname(call.func) not in ("torch.tensor", "torch.as_tensor"):
        return False
    if not isinstance(first, ast.Tuple | ast.List) or len(first.elts) > _FEW:
        return False
    return not any(isinstance(e, ast.Tuple | ast.List | ast.Starred) for e in first.elts)


_FEW = 8


def _f64(a: Analysis, node: ast.AST, what: str, severity: Severity | None = None) -> Finding:
    return R.Float64OnAccelerator.finding(
        f"{what} uses float64 in code that runs on an accelerator, where float64 is many "
        "times slower (and unsupported on MPS): use float32",
        a.loc(node),
        Fix("use float32"),
        severity=severity,
    )


_FLOAT_LAYERS = {
    f"torch.nn.{n}"
    for n in [
        "Linear",
        "Bilinear",
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "LSTM",
        "GRU",
        "RNN",
        "LayerNorm",
        "BatchNorm1d",
        "BatchNorm2d",
    ]
}


@detector(R.IntegerInputToFloatLayer)
def integer_input_to_float_layer(a: Analysis) -> Iterator[Finding]:
    for call in a.calls:
        if not call.args:
            continue
        layer = a.callee_module(call)
        if layer is None or f"torch.nn.{layer.cls}" not in _FLOAT_LAYERS:
            continue
        arg = call.args[0]
        info = a.info(arg)
        if info is None or info.kind != K.TENSOR or not K.is_int(info.dtype):
            continue
        yield R.IntegerInputToFloatLayer.finding(
            f"`{a.name(arg)}` is an {info.dtype} tensor passed to `{a.name(call.func)}` "
            f"(nn.{layer.cls}), which needs floating-point input: cast it with `.float()`",
            a.loc(arg),
            Fix("cast it: `.float()`", (insert_at(a.end(arg), ".float()"),), Safety.UNSAFE),
        )


_INDEX_LOSSES = {"CrossEntropyLoss", "NLLLoss"}
_FLOAT_LOSSES = {"BCELoss", "BCEWithLogitsLoss"}
_FUNCTIONAL = {
    "torch.nn.functional.cross_entropy": "CrossEntropyLoss",
    "torch.nn.functional.nll_loss": "NLLLoss",
    "torch.nn.functional.binary_cross_entropy": "BCELoss",
    "torch.nn.functional.binary_cross_entropy_with_logits": "BCEWithLogitsLoss",
}


@detector(R.LossTargetWrongDtype)
def loss_target_wrong_dtype(a: Analysis) -> Iterator[Finding]:
    for call in a.calls:
        loss = _FUNCTIONAL.get(a.qualname(call.func) or "")
        if loss is None:
            crit = a.callee_module(call)
            loss = crit.cls if crit is not None else None
        if loss is None or len(call.args) < 2:
            continue
        target = call.args[1]
        info = a.info(target)
        if info is None or info.kind != K.TENSOR:
            continue
        if loss in _FLOAT_LOSSES and K.is_int(info.dtype):
            want = "float (`.float()`)"
        elif loss in _INDEX_LOSSES and _explicit_float_cast(target):
            want = "int64 class indices (`.long()`)"
        else:
            continue
        yield R.LossTargetWrongDtype.finding(
            f"`{a.name(target)}` is {info.dtype} but `{loss}` needs {want} targets",
            a.loc(target),
            Fix(f"give {loss} {want} targets"),
        )


def _explicit_float_cast(node: ast.expr) -> bool:
    """``y.float()``: class probabilities are legal float targets, a cast of indices is not."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("float", "double", "half")
    )


_DEPRECATED = {
    "torch.cuda.amp.autocast": ("torch.amp.autocast", '"cuda"'),
    "torch.cpu.amp.autocast": ("torch.amp.autocast", '"cpu"'),
    "torch.cuda.amp.GradScaler": ("torch.amp.GradScaler", '"cuda"'),
    "torch.cuda.amp.custom_fwd": ("torch.amp.custom_fwd", 'device_type="cuda"'),
    "torch.cuda.amp.custom_bwd": ("torch.amp.custom_bwd", 'device_type="cuda"'),
}


@detector(R.DeprecatedAmpApi)
def deprecated_amp_api(a: Analysis) -> Iterator[Finding]:
    seen: set[ast.AST] = set()
    for call in a.calls:
        q = a.qualname(call.func)
        if q in _DEPRECATED:
            seen.add(call.func)
            yield _amp(a, call.func, q, call)
    for node in a.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                q = a.qualname(deco)
                if q in _DEPRECATED and deco not in seen:
                    yield _amp(a, deco, q, None)


def _amp(a: Analysis, func: ast.expr, q: str, call: ast.Call | None) -> Finding:
    new, arg = _DEPRECATED[q]
    torch, imports = ensure_import(a, "torch")
    new_local = torch + new[len("torch") :]
    edits: list[Edit] = [*imports]
    if call is None:
        edits.append(replace_node(a, func, f"{new_local}({arg})"))
    elif arg.startswith("device_type"):
        edits += [replace_node(a, func, new_local), add_keyword(a, call, arg)]
    elif not (q.endswith("autocast") and call.args):
        # autocast's positional parameters moved (enabled -> dtype): only keyword calls are safe
        edits += [replace_node(a, func, new_local), add_first_argument(a, call, arg)]
    fix = Fix(f"use `{new}({arg}, ...)`", tuple(edits) if len(edits) > len(imports) else ())
    return R.DeprecatedAmpApi.finding(
        f"`{a.name(func)}` ({q}) is deprecated: use `{new}({arg}, ...)`",
        a.loc(func),
        fix,
    )


@detector(R.HalfModelWithGradScaler)
def half_model_with_grad_scaler(a: Analysis) -> Iterator[Finding]:
    if not a.makes_scaler:
        return
    scaled = {a.function_of(c) for c in a.call_named(*K.GRAD_SCALERS)}
    trained: set[str] | None = None
    for call, func in a.method_calls("half", "to"):
        info = a.info(func.value)
        if info is None or info.kind != K.MODULE:
            continue
        if call.args if func.attr == "half" else not _to_float16(a, call):
            continue
        owner = a.function_of(call)
        names = {a.text(func.value), *_assigned_name(a, call)}
        trained = _trained_names(a) if trained is None else trained
        if owner not in scaled:
            # cast elsewhere (`build_model` returns `model.half()`, or at module level): the
            # model the optimizer trains, by name, is the one the scaler's function steps
            if owner is not None and not any(_returns_model(owner, n, call) for n in names):
                continue  # another function's own model (a test of half precision)
            if not names & trained:
                continue
        elif trained and not names & trained:
            continue  # a frozen copy beside the trained model (a reference policy, a teacher)
        yield R.HalfModelWithGradScaler.finding(
            f"`{a.name(call)}` converts the model's weights to float16 in a script that uses a "
            "GradScaler: the scaler cannot unscale float16 gradients; keep float32 weights and "
            "use `torch.autocast`",
            a.loc(call),
            Fix("drop the float16 cast and train under `torch.autocast`"),
        )


def _to_float16(a: Analysis, call: ast.Call) -> bool:
    """``.to(torch.float16)``, ``.to(device, dtype=torch.half)``, or a dtype variable that may
    be float16 (``dtype = torch.float16 if cuda else torch.float32``)."""
    for given in (keyword(call, "dtype"), *call.args):
        value = assigned_value(a, given, call.lineno) if isinstance(given, ast.Name) else None
        text = a.text(value or given) if given is not None else ""
        if _FLOAT16.search(text) or (
            given is not None and dtype_of(a, given, call.lineno) == "float16"
        ):
            return True
    return False


_FLOAT16 = re.compile(r"(?<!b)float16|torch\.half\b")  # not bfloat16


def _assigned_name(a: Analysis, call: ast.Call) -> list[str]:
    """``encoder`` of ``encoder = Encoder().to(dtype=...)``."""
    stmt = a.parents.get(call)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            return [target.id]
        if is_self_attr(target):
            return [a.text(target)]  # `self.policy = policy.to(dtype=...)`
    return []


def _returns_model(func: ast.AST, name: str, call: ast.Call) -> bool:
    """``func`` hands the cast model back: ``return model.half()`` or ``return model``."""
    returned = [n.value for n in walk_local(func) if isinstance(n, ast.Return) and n.value]
    return any(
        value is call or any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value))
        for value in returned
    )


def autocast_blocks(a: Analysis) -> Iterator[tuple[ast.With | ast.AsyncWith, ast.Call]]:
    for node in a.of_type(ast.With, ast.AsyncWith):
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                expr = item.context_expr
                if isinstance(expr, ast.Call) and a.qualname(expr.func) in K.AUTOCASTS:
                    yield node, expr


@detector(R.BackwardInsideAutocast)
def backward_inside_autocast(a: Analysis) -> Iterator[Finding]:
    for block, _ in autocast_blocks(a):
        for stmt in block.body:
            for node in descendants(stmt):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "backward"
                    and not node.args
                ):
                    yield R.BackwardInsideAutocast.finding(
                        f"`{a.name(node)}` runs inside the autocast block opened at line "
                        f"{block.lineno}: dedent it so backward runs outside autocast",
                        a.loc(node),
                        Fix("move the backward call out of the `with` block"),
                    )


@detector(R.GradScalerWithBfloat16)
def grad_scaler_with_bfloat16(a: Analysis) -> Iterator[Finding]:
    if "bfloat16" not in a.source or not a.makes_scaler:
        return
    scalers = [c for c in a.call_named(*K.GRAD_SCALERS) if _scaler_enabled(a, c)]
    if not scalers:
        return
    scaled = tuple(a.loc(c) for c in scalers)
    models = [call for call in a.calls if _bf16_model_cast(a, call)]
    autocasts = [cast for _, cast in autocast_blocks(a) if _bf16(a, keyword(cast, "dtype"))]
    for cast in autocasts:
        weights = ""
        if models:
            weights = (
                f" and the model's weights are cast to bfloat16 (line {models[0].lineno}), which "
                "the scaler cannot unscale on CUDA"
            )
        yield R.GradScalerWithBfloat16.finding(
            f"`{a.name(cast)}` runs in bfloat16, yet the script scales the loss with a "
            f"GradScaler (line {scalers[0].lineno}){weights}: bfloat16 does not underflow; "
            "drop the scaler",
            a.loc(cast),
            Fix("remove the GradScaler; call backward() and step() directly"),
            related=scaled + tuple(a.loc(m) for m in models),
        )
    if autocasts:
        return  # one finding per autocast already points at the casts of the model
    for call in models:
        yield R.GradScalerWithBfloat16.finding(
            f"`{a.name(call)}` makes the model's weights bfloat16, yet the script scales the "
            f"loss with a GradScaler (line {scalers[0].lineno}): the scaler cannot unscale "
            "bfloat16 gradients on CUDA and bfloat16 does not underflow; drop the scaler",
            a.loc(call),
            Fix("remove the GradScaler; call backward() and step() directly"),
            related=scaled,
        )


def _bf16(a: Analysis, dtype: ast.expr | None) -> bool:
    return dtype is not None and a.qualname(dtype) == "torch.bfloat16"


def _scaler_enabled(a: Analysis, scaler: ast.Call) -> bool:
    """Whether the scaler may be on: not ``enabled=False``, nor enabled only for some dtype
    (``enabled=(dtype == "float16")``, ``enabled=args.fp16``), the right way to share one
    training loop between float16 and bfloat16."""
    enabled = keyword(scaler, "enabled")
    if isinstance(enabled, ast.Name):
        owner = a.function_of(scaler) or a.tree
        bound = [
            value for at, value in a.assignments(owner).get(enabled.id, []) if at < scaler.lineno
        ]
        enabled = bound[-1] if bound else enabled
    if enabled is None:
        return True
    if isinstance(enabled, ast.Constant):
        return bool(enabled.value)
    text = a.text(enabled)
    return not any(word in text for word in ("16", "half", "dtype"))


def _bf16_model_cast(a: Analysis, call: ast.Call) -> bool:
    """``model.bfloat16()`` / ``model.to(torch.bfloat16)`` on a module whose parameters an
    optimizer (or gradient clipping) takes: a frozen reference model may be bfloat16."""
    if module_cast_dtype(a, call) != "bfloat16":
        return False
    return bool(_model_names(a, call) & _trained_names(a))


def _model_names(a: Analysis, call: ast.Call) -> set[str]:
    """The names the cast module goes by: its receiver and the name it is assigned to."""
    receiver = call.func.value  # type: ignore[attr-defined]
    names = {a.text(receiver)} if isinstance(receiver, ast.Name | ast.Attribute) else set()
    stmt = a.parents.get(call)
    if isinstance(stmt, ast.Assign):
        names.update(a.text(t) for t in stmt.targets)
    return names


def _trained_names(a: Analysis) -> set[str]:
    """Receivers of ``x.parameters()`` handed to an optimizer or to gradient clipping."""
    names: set[str] = set()
    handed = {  # `params = list(a.parameters()) + ...; AdamW(params)`
        arg.id for c in a.calls if _trains(a, c) for arg in c.args if isinstance(arg, ast.Name)
    }
    for call, func in a.method_calls("parameters", "named_parameters"):
        up = a.parents.get(call)
        while isinstance(up, ast.expr):
            if isinstance(up, ast.Call) and _trains(a, up):
                names.add(a.text(func.value))
                break
            up = a.parents.get(up)
        if isinstance(up, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in handed for t in up.targets
        ):
            names.add(a.text(func.value))
    return names


def _trains(a: Analysis, call: ast.Call) -> bool:
    q = a.qualname(call.func) or ""
    return q.startswith(("torch.optim.", "torch.nn.utils.clip_grad"))
