"""The hot loop: the body of a training or evaluation loop, and same-file code called from it.

A loop is hot when it iterates a DataLoader, or when its own body (not a nested loop's)
calls ``backward()``, ``optimizer.step()`` or a model. Functions and methods of the same file
called from a hot loop (including a module's ``forward`` when the model is called) are hot too.
"""

from __future__ import annotations

import ast

from torchport.analyze import kinds as K
from torchport.analyze.context import FileContext, Func, walk_local
from torchport.analyze.scope import loader_of
from torchport.analyze.walk import children, descendants

_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def hot_nodes(ctx: FileContext) -> set[ast.AST]:
    """Every node that runs once per step of some hot loop."""
    hot: set[ast.AST] = set()
    todo: list[Func] = []
    for node in ctx.of_type(*_LOOPS):
        assert isinstance(node, _LOOPS)
        if node not in hot and _is_hot(ctx, node):
            _mark(ctx, node.body, hot, todo)
    seen: set[Func] = set()
    while todo:
        func = todo.pop()
        if func not in seen:
            seen.add(func)
            _mark(ctx, func.body, hot, todo)
    return hot


def _mark(ctx: FileContext, body: list[ast.stmt], hot: set[ast.AST], todo: list[Func]) -> None:
    """Add every node of ``body`` to ``hot`` and the same-file functions it calls to ``todo``."""
    for stmt in body:
        for inner in descendants(stmt):
            hot.add(inner)
            if isinstance(inner, ast.Call):
                todo.extend(_callees(ctx, inner))


def _is_hot(ctx: FileContext, loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    if isinstance(loop, ast.For | ast.AsyncFor):
        wrapped = loader_of(loop.iter)
        iterable = wrapped.args[0] if wrapped is not None else loop.iter
        info = ctx.info(iterable)
        if info is not None and info.kind == K.LOADER:
            return True
    return any(_is_step(ctx, node) for node in _own_body(loop))


def _own_body(loop: ast.AST) -> list[ast.AST]:
    """Nodes of a loop body, not entering nested loops or definitions."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(getattr(loop, "body", []))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (*_LOOPS, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(children(node))
    return out


def _is_step(ctx: FileContext, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        if func.attr == "backward":
            return True
        if func.attr == "step":
            owner = ctx.info(func.value)
            if owner is not None and owner.kind in (K.OPTIMIZER, K.SCALER):
                return True
            return "optim" in ctx.text(func.value).lower()
    if ctx.qualname(func) is not None:
        return False  # a library function or class (torch.cat, nn.Linear): never a model
    if isinstance(func, ast.Name) and func.id not in ctx.bound_names:
        return False  # a builtin or a function: never a model held in a variable
    callee = ctx.info(func)
    return callee is not None and callee.kind == K.MODULE


def _callees(ctx: FileContext, call: ast.Call) -> list[Func]:
    func = call.func
    if isinstance(func, ast.Name) and func.id in ctx.functions:
        return [ctx.functions[func.id]]
    if isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "self":
        owner = ctx.function_of(call)
        cls = ctx.class_of(owner) if owner is not None else None
        method = ctx.method(cls, func.attr) if cls is not None else None
        return [method] if method is not None else []
    callee = ctx.info(func)
    if callee is not None and callee.kind == K.MODULE and callee.cls in ctx.module_classes:
        forward = ctx.method(ctx.classes[callee.cls], "forward")
        return [forward] if forward is not None else []
    return []


def forward_nodes(ctx: FileContext) -> dict[ast.AST, str]:
    """Nodes of each module class's ``forward`` and the same-class helpers it calls.

    Maps node -> the qualified method name (``Net.forward``) it belongs to.
    """
    out: dict[ast.AST, str] = {}
    for name in ctx.module_classes:
        cls = ctx.classes[name]
        forward = ctx.method(cls, "forward")
        todo = [forward] if forward is not None else []
        seen: set[Func] = set()
        while todo:
            func = todo.pop()
            if func in seen:
                continue
            seen.add(func)
            # the body only: default values are evaluated once, when the class is defined
            for node in (n for stmt in func.body for n in (stmt, *walk_local(stmt))):
                out.setdefault(node, f"{name}.{func.name}")
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "self"
                ):
                    helper = ctx.method(cls, node.func.attr)
                    if helper is not None:
                        todo.append(helper)
    return out
