"""Static detectors of how a model is wrapped in DDP and trained under it: wrapped with device
ids before it is moved (TP411), gradients all-reduced at every micro-batch of an accumulation
(TP413), BatchNorm converted to SyncBatchNorm after wrapping (TP415), and a DataParallel
model whose forward returns its loss, backpropagated without reducing the replicas' losses
(TP419).

DataParallel is not flagged: moving the wrapper after wrapping moves its module too, before
the first forward pass, which is when DataParallel checks (with one GPU it moves the module
itself).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.checks.values import assigned_name, assigned_value
from torchport.analyze.context import Func, is_self_attr, walk_local
from torchport.analyze.hot import rarely_runs
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
        if not moves and isinstance(owner, ast.FunctionDef) and _returns(owner, target):
            later = _callers_moving(a, owner)  # `build_model(...).to(device)`
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


def _returns(func: ast.FunctionDef, name: str | None) -> bool:
    """``func`` hands back the value bound to ``name`` (``return model``)."""
    return name is not None and any(
        isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id == name
        for n in walk_local(func)
    )


def _callers_moving(a: Analysis, func: ast.FunctionDef) -> list[ast.Call]:
    """The moves of what a call of ``func`` returned: ``func(...).to(device)`` directly, or
    ``m = func(...)`` and then ``m.to(device)`` in the calling function."""
    found: list[ast.Call] = []
    for call in a.calls:
        if not (isinstance(call.func, ast.Name) and call.func.id == func.name):
            continue
        above = a.parents.get(call)
        if isinstance(above, ast.Attribute) and above.value is call:
            move = a.parents.get(above)
            if any(move is m for m, _ in a.device_moves):
                found.append(move)  # type: ignore[arg-type]
            continue
        bound = _bound_to(a, call)
        if bound is not None:
            caller = a.function_of(call) or a.tree
            found += [m for m in _moves(a, caller, (bound,)) if m.lineno > call.lineno]
    return found


def _without_device_ids(a: Analysis, wrap: ast.Call) -> bool:
    """DDP given no device ids (a CPU or multi-device module is then fine)."""
    ids = keyword(wrap, "device_ids")
    if ids is None and len(wrap.args) > 1:
        ids = wrap.args[1]
    return ids is None or (isinstance(ids, ast.Constant) and ids.value is None)


def _bound_to(a: Analysis, wrap: ast.Call) -> str | None:
    name = assigned_name(a, wrap)
    return None if name is None else name.id


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


_SYNC_SKIPPERS = frozenset({"no_sync", "require_backward_grad_sync"})


@detector(R.AccumulationWithoutNoSync)
def accumulation_without_no_sync(a: Analysis) -> Iterator[Finding]:
    if not any(a.call_named(*_WRAPPERS)):
        return
    # `model.require_backward_grad_sync = last` is the attribute no_sync() sets (the code's
    # own use: a comment that names no_sync is no use of it)
    if any(getattr(n, "attr", "") in _SYNC_SKIPPERS for n in a.of_type(ast.Attribute)):
        return
    for loop in a.of_type(ast.For, ast.While):
        assert isinstance(loop, ast.For | ast.While)
        calls = [n for stmt in loop.body for n in walk_local(stmt) if isinstance(n, ast.Call)]
        steps = [c for c in calls if _is_optimizer_step(a, c)]
        step: ast.Call | None
        if steps:
            if not all(rarely_runs(a, s) for s in steps):
                continue  # a step at every iteration: no accumulation here
            step = steps[0]  # `if (i + 1) % accum == 0: optimizer.step()`
        else:
            # `for micro in range(accum): ... backward()`, then a step per outer iteration
            outer = a.enclosing(loop, ast.For, ast.While)
            step = _step_of(a, outer) if outer is not None else None
            if step is None or rarely_runs(a, loop):
                continue
        for call in calls:
            if (
                _attr(call) != "backward"
                or rarely_runs(a, call)
                or a.enclosing(call, ast.For, ast.While) is not loop
            ):
                continue
            yield R.AccumulationWithoutNoSync.finding(
                f"`{a.name(call)}` runs at every micro-batch while the optimizer steps every "
                f"few (line {step.lineno}): DDP all-reduces the gradients at each backward; "
                "run the micro-batches before the last under `model.no_sync()`",
                a.loc(call),
                Fix("wrap the backward of every micro-batch but the last in `model.no_sync()`"),
                related=(a.loc(step),),
            )


def _is_optimizer_step(a: Analysis, call: ast.Call) -> bool:
    return _attr(call) == "step" and "optim" in a.text(call.func).lower()


def _step_of(a: Analysis, loop: ast.AST) -> ast.Call | None:
    """The optimizer step that ``loop`` runs at every iteration, in its own body (not in a
    nested loop's)."""
    for stmt in getattr(loop, "body", []):
        for node in walk_local(stmt):
            if (
                isinstance(node, ast.Call)
                and _is_optimizer_step(a, node)
                and a.enclosing(node, ast.For, ast.While) is loop
                and not rarely_runs(a, node)
            ):
                return node
    return None


def _attr(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""


@detector(R.SyncBatchNormAfterWrapping)
def sync_batchnorm_after_wrapping(a: Analysis) -> Iterator[Finding]:
    if "convert_sync_batchnorm" not in a.source:
        return
    wraps = list(a.call_named(*_WRAPPERS))
    for call in a.call_named("torch.nn.SyncBatchNorm.convert_sync_batchnorm"):
        given = call.args[0] if call.args else keyword(call, "module")
        if not isinstance(given, ast.Name):
            continue
        owner = a.function_of(call)
        wrap = next(
            (
                w
                for w in wraps
                if a.function_of(w) is owner
                and w.lineno < call.lineno
                and _bound_to(a, w) == given.id
            ),
            None,
        )
        if wrap is None:
            continue
        yield R.SyncBatchNormAfterWrapping.finding(
            f"`{given.id}` was wrapped in DDP at line {wrap.lineno}: converting its BatchNorm "
            "layers now leaves the wrapper synchronizing the old ones; convert first, then wrap",
            a.loc(call),
            Fix("call convert_sync_batchnorm before DistributedDataParallel(...)"),
            related=(a.loc(wrap),),
        )


_FUNCTIONAL_LOSSES = frozenset(
    {"cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
     "kl_div", "ctc_loss", "cosine_embedding_loss", "margin_ranking_loss"}
)  # fmt: skip


@detector(R.DataParallelLossPerReplica)
def data_parallel_loss_per_replica(a: Analysis) -> Iterator[Finding]:
    if "DataParallel" not in a.source:
        return
    for wrap in a.call_named("torch.nn.DataParallel"):
        module = wrap.args[0] if wrap.args else keyword(wrap, "module")
        info = a.info(module) if module is not None else None
        cls = a.classes.get(info.cls or "") if info is not None else None
        forward = a.method(cls, "forward") if cls is not None else None
        returned = _returned_loss(a, forward) if forward is not None else None
        wrapper = _bound_to(a, wrap)
        if returned is None or wrapper is None:
            continue
        ret, position = returned
        for backward in _backwards_of_outputs(a, a.function_of(wrap) or a.tree, wrapper, position):
            yield R.DataParallelLossPerReplica.finding(
                f"`{a.name(backward)}` backpropagates what `{wrapper}` returns: its forward "
                f"returns a loss (line {ret.lineno}), which DataParallel gathers into one "
                "loss per GPU, and backward() of that vector raises; take `.mean()` first",
                a.loc(backward),
                Fix("average the replicas' losses: `loss = model(...).mean()`"),
                related=(a.loc(ret),),
            )


def _returned_loss(a: Analysis, forward: Func) -> tuple[ast.Return, int | None] | None:
    """The ``return`` of ``forward`` that hands back a loss, and the loss's position when it
    returns a tuple (``return loss, preds``); a loss is a loss function's result or the
    result of a same-file method named for one (``self.compute_loss(preds, targets)``)."""
    for ret in (n for n in walk_local(forward) if isinstance(n, ast.Return)):
        if _is_loss(a, ret.value, ret.lineno):
            return ret, None
        if isinstance(ret.value, ast.Tuple):
            for position, item in enumerate(ret.value.elts):
                if _is_loss(a, item, ret.lineno):
                    return ret, position
    return None


def _is_loss(a: Analysis, value: ast.expr | None, line: int) -> bool:
    if isinstance(value, ast.Name):
        value = assigned_value(a, value, line)
    if not isinstance(value, ast.Call):
        return False
    if _is_loss_call(a, value):
        return True
    func = value.func
    named = isinstance(func, ast.Attribute) and "loss" in func.attr.lower()
    return named and is_self_attr(func) and a.own_callee(value) is not None


def _is_loss_call(a: Analysis, call: ast.Call) -> bool:
    name = (a.qualname(call.func) or "").removeprefix("torch.nn.functional.")
    if name in _FUNCTIONAL_LOSSES or (name.endswith("_loss") and "." not in name):
        return True
    info = a.info(call.func)
    return info is not None and info.cls is not None and info.cls.endswith("Loss")


def _backwards_of_outputs(
    a: Analysis, owner: ast.AST, wrapper: str, position: int | None
) -> list[ast.Call]:
    """``loss.backward()`` or ``scaler.scale(loss).backward()`` where ``loss`` was last set to
    ``wrapper(...)`` itself (not ``wrapper(...).mean()``), or unpacked from it at ``position``
    (``loss, preds = model(x, y)``)."""
    found = []
    for node in walk_local(owner):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "backward":
            continue
        receiver = node.func.value
        if isinstance(receiver, ast.Call) and len(receiver.args) == 1:  # scaler.scale(loss)
            receiver = receiver.args[0]
        if not isinstance(receiver, ast.Name):
            continue
        made = _last_binding(owner, receiver, node.lineno)
        if made is None or made[1] != position:
            continue
        if isinstance(made[0], ast.Call) and a.text(made[0].func) == wrapper:
            found.append(node)
    return found


def _last_binding(owner: ast.AST, name: ast.Name, line: int) -> tuple[ast.expr, int | None] | None:
    """The value the last assignment above ``line`` binds ``name`` to, with the position it
    is unpacked from (``a, b = value``; None for ``name = value``)."""
    found: tuple[int, ast.expr, int | None] | None = None
    for node in walk_local(owner):
        if not (isinstance(node, ast.Assign) and node.lineno < line and len(node.targets) == 1):
            continue
        if found is not None and node.lineno <= found[0]:
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == name.id:
            found = (node.lineno, node.value, None)
        elif isinstance(target, ast.Tuple):
            at = [
                i for i, t in enumerate(target.elts) if isinstance(t, ast.Name) and t.id == name.id
            ]
            if at:
                found = (node.lineno, node.value, at[0])
    return None if found is None else (found[1], found[2])
