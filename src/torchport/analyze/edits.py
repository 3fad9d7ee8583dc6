"""Small builders of text edits from ``ast`` positions (characters, not bytes)."""

from __future__ import annotations

import ast

from torchport.analyze.context import FileContext
from torchport.findings import Edit, Location


def location(ctx: FileContext, node: ast.AST) -> Location:
    line, col = ctx.start(node)
    end_line, end_col = ctx.end(node)
    return Location(ctx.path, line, col, end_line, end_col)


def replace_node(ctx: FileContext, node: ast.AST, text: str) -> Edit:
    line, col = ctx.start(node)
    end_line, end_col = ctx.end(node)
    return Edit(line, col, end_line, end_col, text)


def insert_at(position: tuple[int, int], text: str) -> Edit:
    return Edit(position[0], position[1], position[0], position[1], text)


def add_keyword(ctx: FileContext, call: ast.Call, text: str) -> Edit:
    """Insert ``text`` (``name=value``) as the last argument of ``call``."""
    parts: list[ast.AST] = [*call.args, *(kw.value for kw in call.keywords)]
    if parts:
        last = max(
            parts, key=lambda n: (getattr(n, "end_lineno", 0), getattr(n, "end_col_offset", 0))
        )
        return insert_at(ctx.end(last), f", {text}")
    end_line, end_col = ctx.end(call)
    return insert_at((end_line, end_col - 1), text)


def add_first_argument(ctx: FileContext, call: ast.Call, text: str) -> Edit:
    """Insert ``text`` as the first positional argument of ``call``."""
    parts: list[ast.AST] = [*call.args, *(kw.value for kw in call.keywords)]
    if parts:
        first = min(parts, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
        target: ast.AST = first
        for kw in call.keywords:
            if kw.value is first:
                target = kw
        return insert_at(ctx.start(target), f"{text}, ")
    end_line, end_col = ctx.end(call)
    return insert_at((end_line, end_col - 1), text)


def ensure_import(ctx: FileContext, module: str) -> tuple[str, list[Edit]]:
    """The local spelling of ``module`` (e.g. ``torch.nn`` -> ``nn``), importing it if needed."""
    local = ctx.alias_for(module)
    if local is not None:
        return local, []
    root = module.split(".", maxsplit=1)[0]
    if root in ctx.imports or _binds(ctx, root):
        return module, []  # the name is taken by something else: do not shadow it
    return module, [insert_at(_import_position(ctx), f"import {root}\n")]


def _binds(ctx: FileContext, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ctx.of_type(ast.Name)
    )


def _import_position(ctx: FileContext) -> tuple[int, int]:
    body = ctx.tree.body
    index = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        index = 1
    while index < len(body):
        stmt = body[index]
        if not (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            break
        index += 1
    if index < len(body):
        return body[index].lineno, 0
    return len(ctx.lines) + 1, 0
