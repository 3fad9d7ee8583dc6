"""Static detector of a CUDA device index taken from the global rank (TP409)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.checks.values import assigned_value, is_parameter, module_value, rebinds
from torchport.analyze.infer import keyword
from torchport.findings import Finding, Fix
from torchport.rules import distributed as R

_DDP = "torch.nn.parallel.DistributedDataParallel"


@detector(R.GlobalRankAsDevice)
def global_rank_as_device(a: Analysis) -> Iterator[Finding]:
    if "get_rank" not in a.source and "RANK" not in a.source:
        return
    held = _held_by_key(a)
    lines: set[int] = set()  # `DDP(model.to(rank), device_ids=[rank])` is one mistake
    for where, index in device_indices(a):
        if index.lineno in lines or not _is_global_rank(a, index, held):
            continue
        lines.add(index.lineno)
        yield R.GlobalRankAsDevice.finding(
            f"`{a.name(where)}` takes the CUDA device index from the global rank "
            f"(`{a.name(index)}`): on every node after the first it is past the node's GPUs "
            '("invalid device ordinal"); use `int(os.environ["LOCAL_RANK"])`',
            a.loc(where if isinstance(where, ast.JoinedStr) else index),
            Fix('take the device index from `int(os.environ["LOCAL_RANK"])`'),
        )


def device_indices(a: Analysis) -> Iterator[tuple[ast.AST, ast.expr]]:
    """Each expression used as a CUDA device index, with the call, keyword (``device_ids=``)
    or f-string that uses it."""
    for call in a.calls:
        q = a.qualname(call.func)
        func = call.func
        if q == "torch.device":
            yield from ((call, arg) for arg in call.args[1:2] or call.args[:1])
            yield from ((call, k) for k in [keyword(call, "index")] if k is not None)
        elif q in ("torch.cuda.set_device", "torch.cuda.device") or (
            q is None and isinstance(func, ast.Attribute) and func.attr in ("to", "cuda")
        ):
            arg = call.args[0] if call.args else keyword(call, "device")
            if arg is not None:
                yield call, arg
        elif q == _DDP:
            for kw in call.keywords:
                if kw.arg == "output_device":
                    yield kw, kw.value
                elif kw.arg == "device_ids" and isinstance(kw.value, ast.List | ast.Tuple):
                    yield from ((kw, elt) for elt in kw.value.elts)
    for node in a.of_type(ast.JoinedStr):
        assert isinstance(node, ast.JoinedStr)
        parts = node.values
        if len(parts) != 2 or not isinstance(parts[1], ast.FormattedValue):
            continue
        if isinstance(parts[0], ast.Constant) and parts[0].value == "cuda:":
            yield node, parts[1].value


def _key(node: ast.expr) -> str | None:
    """``rank``, ``self.rank``, ``cfg["rank"]``: one text for every spelling of a place."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _key(node.value)
        return None if base is None else f"{base}.{node.attr}"
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = _key(node.value)
        return None if base is None else f"{base}[{node.slice.value!r}]"
    return None


def _held_by_key(a: Analysis) -> dict[str, list[ast.expr | None]]:
    """What each attribute or subscript (``self.rank``, ``cfg["rank"]``) is assigned in the
    file; None for an update (``+=``) whose value is not followed."""
    out: dict[str, list[ast.expr | None]] = {}
    for node in a.of_type(ast.Assign, ast.AugAssign, ast.AnnAssign):
        assert isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value if isinstance(node, ast.Assign) else None
        for target in targets:
            key = None if isinstance(target, ast.Name) else _key(target)
            if key is not None:
                out.setdefault(key, []).append(value)
    return out


def _is_global_rank(
    a: Analysis, expr: ast.expr, held: dict[str, list[ast.expr | None]], depth: int = 0
) -> bool:
    """``dist.get_rank()``, ``int(os.environ["RANK"])``, ``node_rank * gpus + gpu``, or a
    place that only ever holds it."""
    if isinstance(expr, ast.Call):
        if a.qualname(expr.func) == "torch.distributed.get_rank":
            return True
        func = expr.func
        is_int = isinstance(func, ast.Name) and func.id == "int" and len(expr.args) == 1
        return is_int and _reads_rank_variable(a, expr.args[0])
    if _rank_over_nodes(expr):
        return True
    if depth > 2:
        return False
    values = _values_of(a, expr, held)
    return bool(values) and all(
        v is not None and _is_global_rank(a, v, held, depth + 1) for v in values
    )


_NODE = re.compile(r"node|\bnr\b|machine")


def _rank_over_nodes(expr: ast.expr) -> bool:
    """``node_rank * nprocs + local_idx``: a process's rank counted over every node (what an
    ``mp.spawn`` worker computes for ``init_process_group``)."""
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add)):
        return False
    return any(
        isinstance(side, ast.BinOp)
        and isinstance(side.op, ast.Mult)
        and _NODE.search(ast.unparse(side).lower()) is not None
        for side in (expr.left, expr.right)
    )


def _reads_rank_variable(a: Analysis, node: ast.expr) -> bool:
    """``os.environ["RANK"]``, ``os.environ.get("RANK", ...)``, ``os.getenv("RANK", ...)``."""
    if isinstance(node, ast.Subscript):
        name, env = node.slice, node.value
    elif isinstance(node, ast.Call) and node.args:
        name, env = node.args[0], node.func
        if a.qualname(env) not in ("os.environ.get", "os.getenv"):
            return False
    else:
        return False
    return isinstance(name, ast.Constant) and name.value == "RANK" and a.qualname(env) is not None


def _values_of(
    a: Analysis, expr: ast.expr, held: dict[str, list[ast.expr | None]]
) -> list[ast.expr | None]:
    """The values ``expr`` may hold: a local name's last assignment above it, a global
    assigned once, every assignment of an attribute or subscript."""
    if not isinstance(expr, ast.Name):
        key = _key(expr)
        return [] if key is None else held.get(key, [])
    value = assigned_value(a, expr, expr.lineno)
    if value is not None:
        return [value]
    owner = a.function_of(expr)
    if owner is not None and is_parameter(owner, expr.id) and not rebinds(owner, expr.id):
        return a.given(owner, expr.id)  # what the file's calls give it
    found = module_value(a, expr)  # none for a loop variable, a parameter reassigned...
    return [] if found is None else [found]
