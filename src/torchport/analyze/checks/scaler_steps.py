"""Static detectors of the GradScaler's step sequence: `optimizer.step()` that bypasses the
scaler (TP309), `scaler.update()` never called or skipped after `unscale_` (TP310),
gradients of a scaled output used as they are (TP320), `unscale_` at every micro-batch
of an accumulation (TP323), and a scaler made anew for every step (TP326)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.checks.values import assigned_name
from torchport.analyze.context import Func, is_self_attr, walk_local
from torchport.analyze.edits import insert_at, replace_node
from torchport.analyze.hot import rarely_runs
from torchport.findings import Edit, Finding, Fix, Safety
from torchport.rules import amp as A
from torchport.rules import dtype as R


def _functions(a: Analysis) -> Iterator[ast.Module | Func]:
    """The module and every function, when the file makes a GradScaler at all."""
    if not a.makes_scaler:
        return
    yield a.tree
    for node in a.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _calls_in(owner: ast.AST) -> list[ast.Call]:
    return [n for n in walk_local(owner) if isinstance(n, ast.Call)]


def _is_scaler(a: Analysis, node: ast.expr) -> bool:
    info = a.info(node)
    return info is not None and info.kind == K.SCALER


def _scaler_calls(a: Analysis, calls: list[ast.Call], method: str) -> list[ast.Call]:
    return [
        c
        for c in calls
        if isinstance(c.func, ast.Attribute)
        and c.func.attr == method
        and _is_scaler(a, c.func.value)
    ]


@detector(R.OptimizerStepBypassesScaler)
def optimizer_step_bypasses_scaler(a: Analysis) -> Iterator[Finding]:
    for owner in _functions(a):
        calls = _calls_in(owner)
        scaled = _scaler_calls(a, calls, "scale")
        if not scaled:
            continue
        scaler = a.text(scaled[0].func.value)  # type: ignore[attr-defined]
        for call in calls:
            func = call.func
            if not (isinstance(func, ast.Attribute) and func.attr == "step") or call.args:
                continue
            info = a.info(func.value)
            if info is None or info.kind != K.OPTIMIZER:
                continue
            opt = a.text(func.value)
            yield R.OptimizerStepBypassesScaler.finding(
                f"`{opt}.step()` bypasses the GradScaler `{scaler}` that scaled the loss at "
                f"line {scaled[0].lineno}: gradients stay scaled and inf/NaN steps are not "
                f"skipped; call `{scaler}.step({opt})`",
                a.loc(call),
                Fix(
                    f"use `{scaler}.step({opt})`",
                    (replace_node(a, call, f"{scaler}.step({opt})"),),
                    Safety.UNSAFE,
                ),
            )


@detector(R.GradScalerWithoutUpdate)
def grad_scaler_without_update(a: Analysis) -> Iterator[Finding]:
    for owner in _functions(a):
        calls = _calls_in(owner)
        if _scaler_calls(a, calls, "update"):
            yield from _updates_skipped(a, owner)
            continue
        for call in _scaler_calls(a, calls, "step"):
            scaler = a.text(call.func.value)  # type: ignore[attr-defined]
            stmt = a.parents.get(call)
            edits: tuple[Edit, ...] = ()
            if isinstance(stmt, ast.Expr) and stmt.end_lineno == stmt.lineno:
                indent = " " * a.start(stmt)[1]
                edits = (insert_at((stmt.lineno + 1, 0), f"{indent}{scaler}.update()\n"),)
            yield R.GradScalerWithoutUpdate.finding(
                f"`{a.name(call)}` is never followed by `{scaler}.update()` in this function: "
                "the loss scale never adapts",
                a.loc(call),
                Fix(f"call `{scaler}.update()` after the step", edits, Safety.UNSAFE),
            )


def _updates_skipped(a: Analysis, owner: ast.AST) -> Iterator[Finding]:
    """A ``continue`` (in a loop's step) or ``return`` (in a step function) between
    ``scaler.unscale_`` and ``scaler.update()``: the next ``unscale_`` raises (it was already
    called since the last update), and the scale does not adapt to the overflow that made the
    program skip. Skipping after a scaled backward alone is gradient accumulation: fine."""
    scopes: list[tuple[ast.AST, type[ast.stmt]]] = [(owner, ast.Return)]
    scopes += [(n, ast.Continue) for n in walk_local(owner) if isinstance(n, ast.For | ast.While)]
    for scope, exit_type in scopes:
        body = scope.body if isinstance(scope, ast.For | ast.While) else [scope]
        nodes = [n for stmt in body for n in walk_local(stmt)]
        calls = [n for n in nodes if isinstance(n, ast.Call)]
        updates = _scaler_calls(a, calls, "update")
        unscaled = _scaler_calls(a, calls, "unscale_")
        if not updates or not unscaled:
            continue
        first = min(c.lineno for c in unscaled)
        for node in nodes:
            if not isinstance(node, exit_type) or node.lineno < first:
                continue
            if exit_type is ast.Continue and a.enclosing(node, ast.For, ast.While) is not scope:
                continue
            update = next((u for u in updates if u.lineno > node.lineno), None)
            if update is None:
                continue
            word = "continue" if exit_type is ast.Continue else "return"
            yield R.GradScalerWithoutUpdate.finding(
                f"`{word}` skips `{a.name(update)}` (line {update.lineno}) after the loss "
                f"was unscaled (line {first}): the next unscale_ raises and the loss scale "
                "does not adapt; call the update first",
                a.loc(node),
                Fix(f"call `{a.name(update)}` before `{word}`"),
                related=(a.loc(update),),
            )


@detector(A.PenaltyFromScaledGradients)
def penalty_from_scaled_gradients(a: Analysis) -> Iterator[Finding]:
    # A file that reads the scale back is taken to divide by it (where is not followed).
    if not a.makes_scaler or "get_scale" in a.source:
        return
    for call in a.call_named("torch.autograd.grad"):
        outputs = call.args[0] if call.args else _keyword(call, "outputs")
        scaled = next((n for n in _outputs(outputs) if _is_scaled(a, n)), None)
        if scaled is None:
            continue
        yield A.PenaltyFromScaledGradients.finding(
            f"these gradients are of `{a.name(scaled)}`, multiplied by the loss scale, and "
            "the file never divides by `scaler.get_scale()`: a penalty or norm built from "
            "them is off by the scale (65536 at first) on the GPU",
            a.loc(call),
            Fix("divide the gradients by scaler.get_scale() before using them"),
        )


_STEP_SCOPES = (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)


@detector(A.UnscaleEveryMicroBatch)
def unscale_every_micro_batch(a: Analysis) -> Iterator[Finding]:
    if "unscale_" not in a.source or not a.makes_scaler:
        return
    helpers = _unscaling_helpers(a)
    # a loop over micro-batches, or a function called once per micro-batch (``micro_step``)
    for scope in a.of_type(*_STEP_SCOPES):
        body = getattr(scope, "body", [])
        calls = [n for stmt in body for n in walk_local(stmt) if isinstance(n, ast.Call)]
        updates = _scaler_calls(a, calls, "update")
        if not updates or not all(rarely_runs(a, u) for u in updates):
            continue  # updated at every iteration (or never here): nothing accumulates
        unscales = [(c, c) for c in _scaler_calls(a, calls, "unscale_")]
        # a helper of the file that unscales (``self._clip()``), called at every micro-batch
        unscales += [(c, helpers[f]) for c in calls if (f := a.own_callee(c)) in helpers]
        for call, unscale in unscales:
            if rarely_runs(a, call) or a.enclosing(call, *_STEP_SCOPES) is not scope:
                continue
            through = "" if unscale is call else f" (`{a.name(unscale)}` at line {unscale.lineno})"
            yield A.UnscaleEveryMicroBatch.finding(
                f"`{a.name(call)}`{through} runs at every micro-batch but "
                f"`{a.name(updates[0])}` only every few (line {updates[0].lineno}): the second "
                "unscale_ before an update raises on the GPU; unscale (and clip) just before "
                "the step",
                a.loc(call),
                Fix("move unscale_ (and the clipping) into the block that steps and updates"),
                related=tuple(a.loc(n) for n in (updates[0], unscale) if n is not call),
            )


def _unscaling_helpers(a: Analysis) -> dict[Func, ast.Call]:
    """Same-file functions and methods that call ``scaler.unscale_`` whenever they run."""
    out: dict[Func, ast.Call] = {}
    for func in a.of_type(ast.FunctionDef):
        assert isinstance(func, ast.FunctionDef)
        found = _scaler_calls(a, _calls_in(func), "unscale_")
        if found and not rarely_runs(a, found[0]) and a.function_of(found[0]) is func:
            out[func] = found[0]
    return out


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _outputs(node: ast.expr | None) -> list[ast.expr]:
    """The output or outputs handed to ``autograd.grad`` (a list or tuple of them too)."""
    if isinstance(node, ast.List | ast.Tuple):
        return list(node.elts)
    return [] if node is None else [node]


def _is_scaled(a: Analysis, node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "scale"
        and _is_scaler(a, node.func.value)
    )


@detector(A.GradScalerPerStep)
def grad_scaler_per_step(a: Analysis) -> Iterator[Finding]:
    if not a.makes_scaler:
        return
    for call in a.call_named(*K.GRAD_SCALERS):
        target = assigned_name(a, call)
        if not a.is_hot(call) or target is None:
            continue  # `self.scaler = ...` may be made once, lazily
        owner = a.function_of(call) or a.tree
        made_in = a.enclosing(call, ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)
        steps = [
            c
            for c in _calls_in(owner)
            if isinstance(c.func, ast.Attribute)
            and c.func.attr in ("step", "update")
            and isinstance(c.func.value, ast.Name)
            and c.func.value.id == target.id
        ]
        # stepped in a loop of its own: one scaler per epoch or per run, which is fine
        if not steps or any(
            a.enclosing(c, ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef) is not made_in
            for c in steps
        ):
            continue
        yield A.GradScalerPerStep.finding(
            f"`{a.name(call)}` makes a new GradScaler at every step: its loss scale starts "
            "over at 65536 each time, so it never adapts, and a model whose gradients overflow "
            "there skips every step; make the scaler once, before the loop (or in `__init__`)",
            a.loc(call),
            Fix("make the GradScaler once and keep it across steps"),
        )


@detector(A.GradScalerMadeAfterRestore)
def grad_scaler_made_after_restore(a: Analysis) -> Iterator[Finding]:
    if not a.makes_scaler or "load_state_dict" not in a.source:
        return
    for call in a.call_named(*K.GRAD_SCALERS):
        stmt = a.parents.get(call)
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target = stmt.targets[0]
        method = a.function_of(call)
        cls = a.class_of(method) if method is not None else None
        if not is_self_attr(target) or method is None or cls is None or method.name == "__init__":
            continue
        assert isinstance(target, ast.Attribute)
        if not _steps_in_a_loop(method, target.attr):
            continue  # made where it is not trained with: a setup step
        restore = next(
            (
                c
                for other in cls.body
                if isinstance(other, ast.FunctionDef) and other is not method
                for c in _calls_in(other)
                if isinstance(c.func, ast.Attribute)
                and c.func.attr == "load_state_dict"
                and is_self_attr(c.func.value, target.attr)
            ),
            None,
        )
        if restore is None:
            continue
        yield A.GradScalerMadeAfterRestore.finding(
            f"`{method.name}` makes a new GradScaler for `self.{target.attr}` before it trains, "
            f"while `{a.name(restore)}` (line {restore.lineno}) restores that scaler from a "
            "checkpoint: on a resumed run the restored loss scale is dropped; make the scaler "
            "once, in `__init__`",
            a.loc(call),
            Fix("make the GradScaler in `__init__`, before any checkpoint is restored"),
            related=(a.loc(restore),),
        )


def _steps_in_a_loop(method: Func, attr: str) -> bool:
    """``self.<attr>.step(...)`` or ``.scale(...)`` inside a loop of ``method``."""
    for loop in walk_local(method):
        if not isinstance(loop, ast.For | ast.While):
            continue
        for node in ast.walk(loop):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("step", "scale")
                and is_self_attr(node.func.value, attr)
            ):
                return True
    return False
