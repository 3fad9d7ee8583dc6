"""Small facts several detectors share: what a name was last assigned, whether an expression is
a Python number, whether batches may be moved by a ``collate_fn``."""

from __future__ import annotations

import ast

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, last_name
from torchport.analyze.context import Func, is_self_attr, walk_local
from torchport.analyze.infer import keyword
from torchport.findings import Location

_SCALAR_CALLS = ("float", "int", "len", "abs", "round")


def is_scalar(a: Analysis, node: ast.expr) -> bool:
    """A Python number: ``torch.tensor(node)`` then makes a 0-dim tensor."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return is_scalar(a, node.operand)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in _SCALAR_CALLS and func.id not in a.imports:
            return True
        return (a.qualname(func) or "").startswith("math.")
    if isinstance(node, ast.BinOp):
        sides = (node.left, node.right)
        if any(isinstance(s, ast.List | ast.Tuple | ast.ListComp) for s in sides):
            return False
        if any(_array(a, s) for s in sides):
            return False
        if isinstance(node.op, ast.Add | ast.Mult):  # also list concatenation and repetition
            return all(is_scalar(a, s) for s in sides)
        return True
    return False


def _array(a: Analysis, node: ast.expr) -> bool:
    info = a.info(node)
    return info is not None and info.kind in (K.TENSOR, K.NDARRAY)


def assigned_value(a: Analysis, name: ast.Name, line: int) -> ast.expr | None:
    """The value of the last plain ``name = value`` above ``line`` in ``name``'s scope."""
    owner = a.function_of(name) or a.tree
    above = [value for at, value in a.assignments(owner).get(name.id, []) if at < line]
    return above[-1] if above else None


def module_value(a: Analysis, name: ast.Name) -> ast.expr | None:
    """The module's one assignment of ``name`` (a constant set once), read where the function
    holding ``name`` neither takes it as a parameter nor binds it itself."""
    owner = a.function_of(name)
    if owner is not None and (is_parameter(owner, name.id) or rebinds(owner, name.id)):
        return None
    found = a.assignments(a.tree).get(name.id, [])
    return found[0][1] if len(found) == 1 else None


def assigned_name(a: Analysis, node: ast.AST) -> ast.Name | None:
    """``x`` of the statement ``x = <node>``, when ``node`` is the whole value of a plain
    assignment to one name."""
    stmt = a.parents.get(node)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        return target if isinstance(target, ast.Name) else None
    return None


def collates_elsewhere(a: Analysis) -> bool:
    """Whether batches may reach the loop already moved: some DataLoader of the file has a
    ``collate_fn`` (which may move them), or a dataset class of the file moves its items
    (``__getitem__`` returning ``x.to(self.device)``: a mistake of its own, reported there)."""
    loaders = a.call_named("torch.utils.data.DataLoader")
    if any(keyword(call, "collate_fn") is not None for call in loaders):
        return True
    for name in a.dataset_classes:
        methods = [m for m in a.classes[name].body if isinstance(m, ast.FunctionDef)]
        if any(
            isinstance(n, ast.Call)
            and (last_name(n.func) in ("to", "cuda") or keyword(n, "device") is not None)
            for method in methods
            for n in walk_local(method)
        ):
            return True
    return False


def imports_torch(a: Analysis) -> bool:
    """Whether the file imports torch (or a part of it)."""
    return any(q == "torch" or q.startswith("torch.") for q in a.imports.values())


def made_at(a: Analysis, node: ast.AST) -> tuple[Location, ...]:
    """Where a CPU operand got its value, when on another line: the assignment of a variable,
    or the ``return`` values of a same-file helper it was called from."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        helper = a.functions.get(node.func.id)
        if helper is None:
            return ()
        returned = [n.value for n in walk_local(helper) if isinstance(n, ast.Return) and n.value]
        return tuple(a.loc(value) for value in returned)
    if not isinstance(node, ast.Name):
        return ()
    bound = assigned_value(a, node, node.lineno)
    if bound is None or bound.lineno == node.lineno:
        return ()
    return (a.loc(bound),)


def is_parameter(func: Func, name: str) -> bool:
    """Whether ``name`` is one of ``func``'s parameters (``*args`` and ``**kwargs`` too)."""
    args = func.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return any(p is not None and p.arg == name for p in params)


def rebinds(func: Func, name: str, copies_too: bool = True) -> bool:
    """Whether ``func`` itself stores to ``name`` (an assignment, a loop variable...); with
    ``copies_too=False``, ``value = value.clone()`` (or ``.detach()``: the same tensor's copy,
    on its device) and ``value /= n`` (in place on a tensor) do not count."""
    in_place = {id(n.target) for n in walk_local(func) if isinstance(n, ast.AugAssign)}
    for node in walk_local(func):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)):
            continue
        if copies_too or not (id(node) in in_place or _copy_of_itself(func, node, name)):
            return True
    return False


def _copy_of_itself(func: Func, target: ast.Name, name: str) -> bool:
    for stmt in walk_local(func):
        if isinstance(stmt, ast.Assign) and stmt.targets == [target]:
            value = stmt.value
            while (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in ("clone", "detach")
                and not value.args
            ):
                value = value.func.value
            return isinstance(value, ast.Name) and value.id == name and value is not stmt.value
    return False


def parameter_defaults(func: Func) -> dict[str, ast.expr]:
    """Each parameter of ``func`` that has a default, with it (positional and keyword-only)."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    given = positional[len(positional) - len(args.defaults) :]  # the last ones have defaults
    defaults = {p.arg: d for p, d in zip(given, args.defaults, strict=True)}
    keywords = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    return defaults | {p.arg: d for p, d in keywords if d is not None}


def passes_argument(call: ast.Call, func: Func, name: str) -> bool:
    """Whether ``call`` gives ``func`` its parameter ``name``: by keyword, by position (past
    ``self``/``cls`` for a method called on an object), or maybe (``*args``, ``**kwargs``)."""
    if any(k.arg == name or k.arg is None for k in call.keywords):
        return True
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return True
    names = [p.arg for p in [*func.args.posonlyargs, *func.args.args]]
    bound = names[:1] in (["self"], ["cls"]) and isinstance(call.func, ast.Attribute)
    return name in names and names.index(name) - bound < len(call.args)


def module_cast_dtype(a: Analysis, call: ast.Call) -> str | None:
    """The dtype ``model.half()``, ``model.bfloat16()`` or ``model.to(<dtype>)`` casts an evident
    module to (``float16``, ``bfloat16``...); None for any other call."""
    dtype, func = cast_dtype(a, call), call.func
    if dtype is None or not isinstance(func, ast.Attribute):
        return None
    info = a.info(func.value)
    return dtype if info is not None and info.kind == K.MODULE else None


def cast_dtype(a: Analysis, call: ast.Call) -> str | None:
    """The dtype ``x.half()``, ``x.bfloat16()`` or ``x.to(<dtype>)`` casts to, whatever ``x``
    is; None for any other call."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in ("half", "bfloat16"):
        return None if call.args else K.dtype_name(func.attr)
    if func.attr == "to":
        given = [*call.args, *(k.value for k in call.keywords if k.arg == "dtype")]
        return next((d for d in (dtype_of(a, g, call.lineno) for g in given) if d), None)
    return None


_HALF = ("float16", "bfloat16")


def dtype_of(a: Analysis, expr: ast.expr, line: int, depth: int = 0) -> str | None:
    """The dtype ``expr`` names: ``torch.float16``, a variable assigned one, a conditional
    (``torch.float16 if cuda else torch.float32``: the half one, which the GPU path takes) or
    what a same-file function returns (``pick_dtype(device)``)."""
    named = K.dtype_name(a.qualname(expr))
    if named is not None or depth > 3:
        return named
    if isinstance(expr, ast.Name):
        value = assigned_value(a, expr, line)
        return dtype_of(a, value, value.lineno, depth + 1) if value is not None else None
    if isinstance(expr, ast.IfExp):
        return _half_first([dtype_of(a, e, line, depth + 1) for e in (expr.body, expr.orelse)])
    if is_self_attr(expr):
        # `self.model_dtype`, set in a method of the class (`torch.float16 if amp else ...`)
        assert isinstance(expr, ast.Attribute)
        cls = a.class_of(a.function_of(expr) or a.tree)
        sets = a.attr_assignments(cls).get(expr.attr, []) if cls is not None else []
        return _half_first([dtype_of(a, value, stmt.lineno, depth + 1) for stmt, value in sets])
    if isinstance(expr, ast.Call):
        callee = a.own_callee(expr)
        returns = (
            [n.value for n in walk_local(callee) if isinstance(n, ast.Return) and n.value]
            if callee is not None
            else []
        )
        return _half_first([dtype_of(a, r, r.lineno, depth + 1) for r in returns])
    return None


def _half_first(found: list[str | None]) -> str | None:
    """Of the dtypes a value may take, the half one (which the GPU path takes), else any."""
    return next((d for d in found if d in _HALF), next((d for d in found if d), None))
