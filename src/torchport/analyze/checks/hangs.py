"""Static detector of a collective that only the main process reaches (TP416).

A branch is judged for the main process (global or local rank 0) from its test alone:
``rank == 0``, ``local_rank in [-1, 0]``, ``is_main_process()`` run there only; ``rank != 0``,
``local_rank not in [-1, 0]``, ``not is_main_process()`` never. Any other test is unknown and
stops the search: silence beats a guess.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.context import Func
from torchport.analyze.infer import keyword
from torchport.findings import Finding, Fix
from torchport.rules import collectives as R

_COLLECTIVES = {
    f"torch.distributed.{n}"
    for n in (
        "barrier", "all_reduce", "all_gather", "all_gather_object", "all_gather_into_tensor",
        "broadcast", "broadcast_object_list", "reduce", "reduce_scatter", "gather", "scatter",
        "all_to_all", "all_to_all_single",
    )
}  # fmt: skip
_MAIN_WORDS = ("main_process", "is_main", "is_master", "master_process")
_DEPTH = 3  # calls followed from the collective's function up to a guarded call


@detector(R.CollectiveOnOneRank)
def collective_on_one_rank(a: Analysis) -> Iterator[Finding]:
    if "rank" not in a.source and "main" not in a.source:
        return
    for call in a.call_named(*_COLLECTIVES):
        if _in_a_group(a, call) or _skipped_on_main(a, call):
            continue  # a group of its own may hold the main process alone
        own = _main_only_guard(a, call)
        path: tuple[ast.If, ast.Call] | None = None
        if own is not None and not _released_for_the_others(a, call):
            path = (own, call)
        else:  # reached on every process here: unless the function runs on the main one only
            path = _guarded_path(a, a.function_of(call), _DEPTH)
        if path is None:
            continue
        guard, site = path
        yield R.CollectiveOnOneRank.finding(
            f"`{a.name(call)}` waits for every process, but only the main process gets here: "
            f"line {site.lineno} runs this code under `{a.text(guard.test)}`, so the others "
            "never join and the main process hangs; call it on every process",
            a.loc(call),
            Fix("call the code holding the collective on every process"),
            related=(a.loc(guard), a.loc(site)),
        )


# where each collective takes its ``group`` positionally (barrier(group), all_reduce(t, op, g))
_GROUP_POSITION = {"barrier": 0, "all_gather_object": 2, "broadcast_object_list": 2}


def _in_a_group(a: Analysis, call: ast.Call) -> bool:
    name = (a.qualname(call.func) or "").rsplit(".", 1)[-1]
    return keyword(call, "group") is not None or len(call.args) > _GROUP_POSITION.get(name, 2)


def _released_for_the_others(a: Analysis, call: ast.Call) -> bool:
    """The "main process first" idiom: the same collective in the same function, in a branch
    the main process skips (the others wait there until the main one reaches ``call``)."""
    name = a.qualname(call.func) or ""
    return any(
        other is not call
        and a.function_of(other) is a.function_of(call)
        and _skipped_on_main(a, other)
        for other in a.call_named(name)
    )


def _guarded_path(a: Analysis, func: Func | None, depth: int) -> tuple[ast.If, ast.Call] | None:
    """A call of ``func`` (or of a function calling it, ``depth`` levels up) made under a
    main-process-only branch, with that branch."""
    if func is None or depth == 0:
        return None
    for site in _calls_of(a, func):
        guard = _main_only_guard(a, site)
        if guard is not None:
            return guard, site
        if not _skipped_on_main(a, site):
            found = _guarded_path(a, a.function_of(site), depth - 1)
            if found is not None:
                return found
    return None


def _calls_of(a: Analysis, func: Func) -> list[ast.Call]:
    found = [c for c in a.calls_named.get(func.name, []) if a.own_callee(c) is func]
    return found + _calls_on_instances(a, func)


def _calls_on_instances(a: Analysis, func: Func) -> list[ast.Call]:
    """``meter.aggregate()`` on an object handed around (a parameter): calls of a method that
    only one class of the file defines, on a receiver not known to be something else."""
    cls = a.class_of(func)
    if cls is None or func.name.startswith("__"):
        return []
    owners = [c for c in a.classes.values() if a.method(c, func.name) is not None]
    if owners != [cls]:
        return []
    out = []
    for call, method in a.method_calls(func.name):
        receiver = method.value
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
            continue  # `self.m()`: own_callee's
        if a.qualname(method) is not None:
            continue  # `torch.save(...)`: a library's function, not this class's method
        info = a.info(receiver)
        if info is None or info.cls == cls.name:
            out.append(call)
    return out


def _main_only_guard(a: Analysis, node: ast.AST) -> ast.If | None:
    """The enclosing ``if`` (within its function) whose branch holding ``node`` only the main
    process runs."""
    return next((up for up, taken in _branches(a, node) if taken is True), None)


def _skipped_on_main(a: Analysis, node: ast.AST) -> bool:
    """Whether an enclosing branch (within its function) never runs on the main process."""
    return any(taken is False for _, taken in _branches(a, node))


def _branches(a: Analysis, node: ast.AST) -> Iterator[tuple[ast.If, bool | None]]:
    """Each ``if`` around ``node`` within its function, with whether the main process takes
    the branch that holds ``node`` (None: unknown)."""
    child = node
    for up in a.ancestors(node):
        if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        if isinstance(up, ast.If) and child is not up.test:
            main = _on_main(up.test)
            yield up, None if main is None else (main if child in up.body else not main)
        child = up


def _on_main(test: ast.expr) -> bool | None:
    """True: only the main process takes this branch; False: it never does; None: unknown."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _on_main(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        parts = [_on_main(v) for v in test.values]
        if False in parts:
            return False
        return True if True in parts else None
    if isinstance(test, ast.Call | ast.Name | ast.Attribute):  # is_main_process(), a flag
        name = ast.unparse(test.func if isinstance(test, ast.Call) else test).lower()
        return True if any(w in name for w in _MAIN_WORDS) else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        return _rank_compare(test.left, test.ops[0], test.comparators[0])
    return None


def _rank_compare(left: ast.expr, op: ast.cmpop, right: ast.expr) -> bool | None:
    if isinstance(left, ast.Constant):  # `0 == rank`
        left, right = right, left
    if "rank" not in ast.unparse(left).lower():
        return None
    if isinstance(right, ast.Constant) and right.value == 0:
        if isinstance(op, ast.Eq | ast.LtE | ast.Lt):
            return isinstance(op, ast.Eq | ast.LtE) or None
        if isinstance(op, ast.NotEq | ast.Gt):
            return False
    if isinstance(right, ast.List | ast.Tuple | ast.Set):
        values = {_number(e) for e in right.elts}
        if 0 in values and values <= {0, -1}:
            if isinstance(op, ast.In):
                return True
            if isinstance(op, ast.NotIn):
                return False
    return None


def _number(node: ast.expr) -> object:
    """``0``, ``-1``: the constant, or None for anything else."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
