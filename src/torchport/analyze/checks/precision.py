"""Static detectors of half precision: constants float16 cannot hold, too large (TP317) or too
small (TP318), and float32 inputs given to a model cast to half precision (TP325)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector, last_name
from torchport.analyze.checks.settings import setting_default
from torchport.analyze.checks.values import (
    assigned_value,
    cast_dtype,
    module_cast_dtype,
    parameter_defaults,
)
from torchport.analyze.context import is_self_attr
from torchport.analyze.edits import ensure_import, replace_node
from torchport.analyze.infer import keyword
from torchport.findings import Finding, Fix, Safety, Severity
from torchport.rules import dtype as R
from torchport.rules import optimizers as O

FLOAT16_MAX = 65504.0
FLOAT16_SMALLEST = 5.96e-8  # the smallest positive float16 (a subnormal); less rounds to 0
_FILLS = ("masked_fill", "masked_fill_", "fill_")


@detector(R.Float16OverflowingConstant)
def float16_overflowing_constant(a: Analysis) -> Iterator[Finding]:
    if ("fill" not in a.source and "where" not in a.source) or not _computes_in_float16(a):
        return
    values = _Numbers(a)
    yield from _where_constants(a, values)
    for call, func in a.method_calls(*_FILLS):
        value = call.args[-1] if call.args else None
        number = values.of(value, call) if value is not None else None
        if value is None or number is None or abs(number) <= FLOAT16_MAX:
            continue
        end = "min" if number < 0 else "max"
        torch, imports = ensure_import(a, "torch")
        receiver = a.text(func.value)
        replacement = f"{torch}.finfo({receiver}.dtype).{end}"
        shown = f"`{a.text(value)}`"
        if _number(value) is None:
            shown += f" ({number:g})"  # a parameter's default or a constant set elsewhere
        yield R.Float16OverflowingConstant.finding(
            f"{shown} does not fit float16 (at most ±65504): where `{receiver}` is "
            f"float16 (this file computes in float16) `{func.attr}` fails; use `{replacement}`",
            a.loc(value),
            Fix(
                f"use `{replacement}`",
                (*imports, replace_node(a, value, replacement)),
                Safety.UNSAFE,
            ),
        )


# `torch.finfo(torch.float32).min`: a wider dtype's limits, written for float32 code
_WIDE_LIMITS = {
    "torch.float32": 3.4028234663852886e38, "torch.float": 3.4028234663852886e38,
    "torch.float64": 1.7976931348623157e308, "torch.double": 1.7976931348623157e308,
}  # fmt: skip


def _where_constants(a: Analysis, values: _Numbers) -> Iterator[Finding]:
    """``torch.where(mask, scores, -2.38e38)``: a fill value float16 cannot hold, which
    becomes -inf there (and NaN after a softmax over a fully masked row)."""
    for call in a.call_named("torch.where"):
        for value in call.args[1:3]:
            number = values.of(value, call, local=True)
            if number is None or abs(number) <= FLOAT16_MAX:
                continue
            shown = f"`{a.text(value)}`" + ("" if _number(value) is not None else f" ({number:g})")
            yield R.Float16OverflowingConstant.finding(
                f"{shown} does not fit float16 (at most ±65504): where `torch.where` picks "
                "from float16 scores (this file computes in float16) it becomes infinite; use "
                "`torch.finfo(scores.dtype).min`",
                a.loc(value),
                Fix("use `torch.finfo(<the other operand>.dtype).min` (or `.max`)"),
            )


def _number(node: ast.expr) -> float | None:
    """The value of a numeric literal (``-1e9`` included), or of ``torch.finfo(torch.float32)
    .min`` and the like, or None."""
    sign = 1.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1.0, node.operand
    limit = _finfo_limit(node)
    if limit is not None:
        return sign * limit
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value != float("inf"):
        return sign * float(value)
    return None


def _finfo_limit(node: ast.expr) -> float | None:
    """``torch.finfo(torch.float32).min`` (negative) or ``.max``, for float32 and float64."""
    if not (isinstance(node, ast.Attribute) and node.attr in ("min", "max")):
        return None
    call = node.value
    if not (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords):
        return None
    func, dtype = ast.unparse(call.func), ast.unparse(call.args[0])
    if func not in ("torch.finfo", "finfo") or dtype not in _WIDE_LIMITS:
        return None
    return _WIDE_LIMITS[dtype] * (-1.0 if node.attr == "min" else 1.0)


def _computes_in_float16(a: Analysis) -> bool:
    """``.half()``, ``torch.float16``/``torch.half``, or an autocast without bfloat16."""
    source = a.source
    if ".half()" in source or "float16" in source or "torch.half" in source:
        return True
    return "autocast" in source and "bfloat16" not in source


# Functions whose default eps float16 cannot hold: a zero vector then divides 0 by 0.
# (Under autocast their norms run in float32: only a file that casts to float16 is at risk.)
_DEFAULT_EPS = {
    "torch.nn.functional.normalize": 1e-12,
    "torch.nn.functional.cosine_similarity": 1e-8,
}


@detector(R.Float16VanishingEpsilon)
def float16_vanishing_epsilon(a: Analysis) -> Iterator[Finding]:
    yield from _default_eps(a)
    if "e-" not in a.source or not _computes_in_float16(a):
        return
    values = _Numbers(a)
    for node, guard in _guards(a):
        value = values.of(guard, node)
        if value is not None and 0 < abs(value) < FLOAT16_SMALLEST:
            yield R.Float16VanishingEpsilon.finding(
                f"`{a.text(guard)}` ({value:g}) rounds to 0 in float16: where "
                f"`{a.name(node)}` is computed in float16 (this file computes in float16) "
                "the guard does nothing; compute it in float32 or use an eps float16 holds",
                a.loc(node),
                Fix("compute this in float32 (`.float()`), or use an eps of 1e-4 or more"),
            )


_CLAMPS = ("clamp", "clamp_min", "clamp_", "clamp_min_")


def _guards(a: Analysis) -> Iterator[tuple[ast.AST, ast.expr]]:
    """Where a small number guards a division or a log: ``x + eps`` (either side, once) and a
    clamp from below (``norm.clamp_min(eps)``, ``x.clamp(min=eps)``, ``torch.clamp(x, eps)``)."""
    for node in a.of_type(ast.BinOp):
        assert isinstance(node, ast.BinOp)
        if not isinstance(node.op, ast.Add) or all(map(_literal, (node.left, node.right))):
            continue  # `1e-30 + 1e-30j`: arithmetic on constants, no tensor
        yield node, node.left
        yield node, node.right
    if "clamp" not in a.source:
        return
    for call, func in a.method_calls(*_CLAMPS):
        if a.qualname(func) in ("torch.clamp", "torch.clamp_min"):
            given = call.args[1] if len(call.args) > 1 else keyword(call, "min")
        else:
            given = call.args[0] if call.args else keyword(call, "min")
        if given is not None:
            yield call, given


class _Numbers:
    """The number an expression stands for: a literal, a module-level constant (``EPS =
    1e-15``), a parameter's default (``def f(q, eps=1e-12)``) or ``self.eps`` set in
    ``__init__`` (each class looked at once, on demand)."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self.named = _named_numbers(a)
        self.attributes: dict[ast.ClassDef, dict[str, float]] = {}

    def of(self, expr: ast.expr, where: ast.AST, local: bool = False) -> float | None:
        """The number, also through an assignment in the function when ``local`` (costly:
        asked only where few expressions are looked at)."""
        a = self.a
        if isinstance(expr, ast.Name):
            func = a.function_of(where)
            defaults = parameter_defaults(func) if func is not None else {}
            if expr.id in defaults:
                return _number(defaults[expr.id])
            bound = assigned_value(a, expr, expr.lineno) if local and func else None
            if bound is not None:
                return _number(bound)  # `big_neg = -2.38e38` above its use
            return self.named.get(expr.id)
        if is_self_attr(expr):
            cls = a.class_of(a.function_of(where) or a.tree)
            if cls is None:
                return None
            if cls not in self.attributes:
                self.attributes[cls] = _attribute_numbers(a, cls)
            return self.attributes[cls].get(expr.attr)  # type: ignore[attr-defined]
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            # `args.adam_eps`: a config class's field or a command-line option's default
            found = setting_default(a, expr)
            return _number(found[0]) if found is not None else None
        return _number(expr)


def _default_eps(a: Analysis) -> Iterator[Finding]:
    """``F.normalize(x)`` left with its default eps, or given one float16 cannot hold
    (``eps=eps`` where the helper's ``eps=1e-12``)."""
    if ".half()" not in a.source and "float16" not in a.source and "torch.half" not in a.source:
        return
    values = _Numbers(a)
    for call in a.call_named(*_DEFAULT_EPS):
        given = keyword(call, "eps")
        if any(k.arg is None for k in call.keywords) or len(call.args) > 3:
            continue
        if given is None:
            eps, keeps = _DEFAULT_EPS[a.qualname(call.func) or ""], "keeps its default eps"
        else:
            found = values.of(given, call)
            if found is None or not 0 < found < FLOAT16_SMALLEST:
                continue
            eps, keeps = found, f"is given eps `{a.text(given)}`"
        yield R.Float16VanishingEpsilon.finding(
            f"`{a.name(call)}` {keeps} ({eps:g}), which rounds to 0 in float16: "
            "where the input is float16 (this file casts to float16) a zero vector gives 0/0 "
            "= NaN; pass `eps=1e-6` or compute it in float32",
            a.loc(call),
            Fix("pass eps=1e-6 (float16 holds it), or compute it in float32"),
        )


def _literal(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant)


def _named_numbers(a: Analysis) -> dict[str, float]:
    """Module-level names bound to a number (``EPS = 1e-15``); the last binding wins."""
    out: dict[str, float] = {}
    for stmt in a.tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], _number(stmt.value)
            if isinstance(target, ast.Name) and value is not None:
                out[target.id] = value
    return out


def _attribute_numbers(a: Analysis, cls: ast.ClassDef) -> dict[str, float]:
    """``self.eps`` and the like of one class, where ``__init__`` sets it to a number or to a
    parameter with a number as default (``def __init__(self, eps=1e-10): self.eps = eps``)."""
    out: dict[str, float] = {}
    init = a.method(cls, "__init__")
    if init is None:
        return out
    defaults = parameter_defaults(init)
    for stmt in ast.walk(init):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target, value = stmt.targets[0], stmt.value
        if not is_self_attr(target):
            continue
        if isinstance(value, ast.Name) and value.id in defaults:
            value = defaults[value.id]
        number = _number(value)
        if number is not None:
            out[target.attr] = number  # type: ignore[attr-defined]
    return out


_HALF = ("float16", "bfloat16")
_HALF_WORDS = (".half()", ".bfloat16()", "float16", "bfloat16", "torch.half", "HalfTensor")


@detector(R.Float32InputToHalfModel)
def float32_input_to_half_model(a: Analysis) -> Iterator[Finding]:
    if "autocast" in a.source or not any(w in a.source for w in _HALF_WORDS):
        return
    halved = {
        a.text(call.func.value): call  # type: ignore[attr-defined]
        for call in a.calls
        if _model_cast(a, call)
    }
    if not halved or _casts_a_tensor_to_half(a):
        return
    for call in a.calls:
        cast = halved.get(a.text(call.func))
        if cast is None or not call.args:
            continue
        made_float = _float_casts(a, call.args[0])
        if not made_float and not _is_batch(a, call.args[0]):
            continue
        yield R.Float32InputToHalfModel.finding(
            f"`{a.name(call.args[0])}` reaches `{a.text(call.func)}`, which line "
            f"{cast.lineno} casts to half precision, as float32 (nothing casts it): the first "
            'layer fails with "Input type (FloatTensor) and weight type (HalfTensor)"; cast '
            "the input to the model's dtype",
            a.loc(call.args[0]),
            Fix("cast the input to the model's dtype (`x.to(next(model.parameters()).dtype)`)"),
            related=tuple(a.loc(node) for node in made_float),
        )


def _model_cast(a: Analysis, call: ast.Call) -> bool:
    """``model.half()`` of an evident module, or of a receiver of unknown kind named as a
    model (``self.model``, a ``model`` parameter)."""
    if module_cast_dtype(a, call) in _HALF:
        return True
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("half", "bfloat16")) or call.args:
        return False
    name = a.text(func.value).rsplit(".", 1)[-1].lower()
    return a.info(func.value) is None and ("model" in name or name.endswith("net"))


def _casts_a_tensor_to_half(a: Analysis) -> bool:
    """A cast to half precision of anything but a module: the program prepares its inputs."""
    for call in a.calls:
        func = call.func
        if not isinstance(func, ast.Attribute) or _model_cast(a, call):
            continue
        if func.attr in ("half", "bfloat16"):
            return True
        given = [*call.args, *(k.value for k in call.keywords)]
        if func.attr in ("to", "type") and any(
            w in a.text(g) for g in given for w in ("float16", "bfloat16", "half", "dtype")
        ):
            return True
    return False


def _float_casts(a: Analysis, arg: ast.expr) -> list[ast.AST]:
    """The ``.float()`` casts that make ``arg``: in its own text, in what its name was assigned,
    or in the same-file function or method it calls (``self.preprocess(frame)``)."""
    sources: list[ast.AST] = [arg]
    if isinstance(arg, ast.Name):
        value = assigned_value(a, arg, arg.lineno)
        if value is not None:
            sources.append(value)
    if isinstance(arg, ast.Call):
        callee = a.own_callee(arg)
        if callee is not None:
            sources.append(callee)
    return [
        node
        for source in sources
        for node in ast.walk(source)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "float"
        and not node.args
    ]


def _is_batch(a: Analysis, arg: ast.expr) -> bool:
    info = a.info(arg)
    return info is not None and info.kind == K.TENSOR and info.batch


# Optimizers that divide by `sqrt(v) + eps`, and their default eps.
_EPS_OPTIMIZERS = {
    "torch.optim.Adam": 1e-8,
    "torch.optim.AdamW": 1e-8,
    "torch.optim.NAdam": 1e-8,
    "torch.optim.RAdam": 1e-8,
    "torch.optim.Adamax": 1e-8,
    "torch.optim.Adagrad": 1e-10,
    "torch.optim.RMSprop": 1e-8,
}
_ROUNDS_TO_ZERO = 2.0**-25  # half the smallest float16 subnormal


@detector(O.Float16OptimizerEpsilon)
def float16_optimizer_epsilon(a: Analysis) -> Iterator[Finding]:
    """An Adam-family optimizer whose eps float16 rounds to 0, in a file that casts a model to
    float16 (on its GPU path, too): a suggestion, as which parameters it steps is not evident
    from the code (a float16 teacher beside a float32 student is fine)."""
    if "float16" not in a.source and "half" not in a.source:
        return
    casts = [call for call in a.calls if _half_cast(a, call)]
    if not casts:
        return
    values = _Numbers(a)
    for call in a.call_named(*_EPS_OPTIMIZERS):
        given = keyword(call, "eps")
        default = _EPS_OPTIMIZERS[a.qualname(call.func) or ""]
        eps = default if given is None else values.of(given, call)
        if eps is None or not 0 <= eps <= _ROUNDS_TO_ZERO:
            continue
        # the cast of the model whose parameters it steps (`model.to(dtype=...)`), if any
        owner = _parameters_of(a, call)
        own = [
            c for c in casts if isinstance(c.func, ast.Attribute) and a.text(c.func.value) == owner
        ]
        cast = (own or casts)[0]
        yield O.Float16OptimizerEpsilon.finding(
            f"`{a.name(call)}` keeps eps={eps:g}, which is 0 in float16, and this file casts "
            f"a model to float16 (line {cast.lineno}): if these parameters are float16, "
            "the update divides by zero once a squared gradient underflows",
            a.loc(call),
            Fix("keep float32 parameters (autocast computes in float16), or pass eps=1e-4"),
            severity=Severity.INFO,
            related=(a.loc(cast),),
        )


def _half_cast(a: Analysis, call: ast.Call) -> bool:
    """``model.half()``, ``model.to(dtype=torch.float16)`` (also the GPU arm of a choice)."""
    if module_cast_dtype(a, call) == "float16":
        return True
    to = isinstance(call.func, ast.Attribute) and call.func.attr == "to"
    return to and cast_dtype(a, call) == "float16"


def _parameters_of(a: Analysis, optimizer: ast.Call) -> str | None:
    """``model`` of ``torch.optim.Adam(model.parameters(), ...)``."""
    for node in ast.walk(optimizer.args[0]) if optimizer.args else ():
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr == "parameters":
            return a.text(func.value)
    return None


# Decompositions and solvers whose results a TF32 product in their input visibly changes.
_LINEAR_ALGEBRA = frozenset(
    {
        *(f"torch.linalg.{n}" for n in (
            "svd", "svdvals", "det", "slogdet", "solve", "inv", "pinv", "lstsq", "eig",
            "eigh", "eigvals", "eigvalsh", "cholesky", "qr", "matrix_rank", "lu", "lu_factor",
        )),
        "torch.svd", "torch.det", "torch.inverse", "torch.pinverse", "torch.cholesky",
        "torch.qr", "torch.lstsq", "torch.symeig",
    }
)  # fmt: skip
_TF32_PRECISIONS = ("high", "medium")


@detector(R.Tf32BeforeLinearAlgebra)
def tf32_before_linear_algebra(a: Analysis) -> Iterator[Finding]:
    if "tf32" not in a.source and "float32_matmul_precision" not in a.source:
        return
    solver = next(
        (
            c
            for c in a.calls
            if a.qualname(c.func) in _LINEAR_ALGEBRA and c.args and _a_product(a, c.args[0])
        ),
        None,
    )
    if solver is None:
        return
    for node in _tf32_switches(a):
        yield R.Tf32BeforeLinearAlgebra.finding(
            f"`{a.text(node)}` lets float32 matrix products run in TF32 (10 bits of mantissa "
            f"on Ampere and newer GPUs), and `{a.name(solver)}` (line {solver.lineno}) "
            "decomposes or solves such results: compute what feeds it in float64, or turn "
            "TF32 off around it",
            a.loc(node),
            Fix("compute the solver's input in float64 (or set allow_tf32 = False around it)"),
            related=(a.loc(solver),),
        )


_PRODUCTS = frozenset({"matmul", "mm", "bmm", "einsum", "addmm", "baddbmm", "cov"})


def _a_product(a: Analysis, value: ast.expr) -> bool:
    """A float32 matrix product (``x.T @ y``, ``torch.mm``), written there or assigned to
    the name; not one of float64 operands (``x.double()``), which never uses TF32."""
    if isinstance(value, ast.Name):
        value = assigned_value(a, value, value.lineno) or value
    if "double()" in a.text(value) or "float64" in a.text(value):
        return False
    if _has_product(value):
        return True
    # ``k = self.kernel(x, x) + noise``: a same-file helper whose body takes the product
    helpers = (a.own_callee(n) for n in ast.walk(value) if isinstance(n, ast.Call))
    return any(h is not None and _has_product(h) for h in helpers)


def _has_product(node: ast.AST) -> bool:
    return any(
        (isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult))
        or (isinstance(n, ast.Call) and last_name(n.func) in _PRODUCTS)
        for n in ast.walk(node)
    )


def _tf32_switches(a: Analysis) -> Iterator[ast.AST]:
    """``torch.backends.cuda.matmul.allow_tf32 = <not False>`` and
    ``torch.set_float32_matmul_precision("high" or "medium")``."""
    for stmt in a.of_type(ast.Assign):
        assert isinstance(stmt, ast.Assign)
        target = stmt.targets[0]
        if not (isinstance(target, ast.Attribute) and target.attr == "allow_tf32"):
            continue
        if not a.text(target.value).endswith("matmul"):
            continue  # cudnn's flag: convolutions, not the products a solver is given
        off = isinstance(stmt.value, ast.Constant) and stmt.value.value is False
        if not off:
            yield stmt
    for call in a.call_named("torch.set_float32_matmul_precision"):
        given = call.args[0] if call.args else keyword(call, "precision")
        if isinstance(given, ast.Constant) and given.value in _TF32_PRECISIONS:
            yield call
