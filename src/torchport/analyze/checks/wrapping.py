"""Static detector of a model wrapped in DDP with device ids before it is moved (TP411).

DataParallel is not flagged: moving the wrapper after wrapping moves its module too, before
the first forward pass, which is when DataParallel checks (with one GPU it moves the module
itself).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.infer import keyword
from torchport.findings import Finding, Fix
from torchport.rules import distributed as R

_WRAPPERS = ("torch.nn.parallel.DistributedDataParallel",)


@detector(R.WrappedBeforeMoved)
def wrapped_before_moved(a: Analysis) -> Iterator[Finding]:
    for wrap in a.call_named(*_WRAPPERS):
        module = wrap.args[0] if wrap.args else keyword(wrap, "module")
        if not isinstance(module, ast.Name) or _without_device_ids(a, wrap):
            continue
        target = _bound_to(a, wrap)
        owner = a.function_of(wrap) or a.tree
        moves = _moves(a, owner, (module.id, target))
        earlier = [m for m in moves if m.lineno < wrap.lineno]
        later = [m for m in moves if m.lineno > wrap.end_lineno]  # type: ignore[operator]
        if earlier or not later:
            continue  # moved before, or never here: nothing says the order is wrong
        yield R.WrappedBeforeMoved.finding(
            f"`{module.id}` is wrapped in `{a.name(wrap.func)}` before it is moved to the "
            f"device (line {later[0].lineno}): DDP reads where the module is when it is made, "
            "and with device_ids it refuses a CPU module",
            a.loc(wrap),
            Fix(f"move `{module.id}` first: `{a.name(wrap.func)}({module.id}.to(device), ...)`"),
            related=(a.loc(later[0]),),
        )


def _without_device_ids(a: Analysis, wrap: ast.Call) -> bool:
    """DDP given no device ids (a CPU or multi-device module is then fine)."""
    ids = keyword(wrap, "device_ids")
    if ids is None and len(wrap.args) > 1:
        ids = wrap.args[1]
    return ids is None or (isinstance(ids, ast.Constant) and ids.value is None)


def _bound_to(a: Analysis, wrap: ast.Call) -> str | None:
    stmt = a.parents.get(wrap)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        name = stmt.targets[0]
        return name.id if isinstance(name, ast.Name) else None
    return None


def _moves(a: Analysis, owner: ast.AST, names: tuple[str | None, ...]) -> list[ast.Call]:
    """``x.to(<device>)`` and ``x.cuda()`` in ``owner`` on a plain name among ``names``."""
    return [
        call
        for call, _ in a.device_moves
        if isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id in names
        and (a.function_of(call) or a.tree) is owner
    ]
