"""Text edits the port makes, from ``ast`` positions: nothing outside the changed spans moves.

Every edit is an insertion or a replacement of one node's span, so comments, blank lines and
the formatting of untouched code stay exactly as they were.
"""

from __future__ import annotations

import ast

from torchport.analyze.context import FileContext
from torchport.analyze.edits import insert_at, replace_node
from torchport.findings import Edit

# Expressions that can take a method call without parentheses: `x.to(d)`, `f(x).to(d)`.
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.List, ast.Dict, ast.Set)


def atomic(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return not isinstance(node.value, int | float | complex)  # `1.to()` would not parse
    return isinstance(node, _ATOMS)


def method_suffix(ctx: FileContext, node: ast.expr, text: str) -> list[Edit]:
    """``node`` followed by ``text`` (``.to(device)``), parenthesised when it must be."""
    if atomic(node):
        return [insert_at(ctx.end(node), text)]
    return [insert_at(ctx.start(node), "("), insert_at(ctx.end(node), ")" + text)]


def wrap(ctx: FileContext, node: ast.expr, before: str, after: str) -> list[Edit]:
    return [insert_at(ctx.start(node), before), insert_at(ctx.end(node), after)]


def indent_of(ctx: FileContext, stmt: ast.stmt) -> str | None:
    """The indentation of ``stmt`` when it starts its own line (None after a ``;`` or ``:``)."""
    line, col = ctx.start(stmt)
    prefix = ctx.lines[line - 1][:col]
    return prefix if prefix.strip() == "" else None


def insert_before(ctx: FileContext, stmt: ast.stmt, lines: list[str]) -> Edit | None:
    indent = indent_of(ctx, stmt)
    if indent is None:
        return None
    text = "".join(f"{indent}{line}\n" for line in lines)
    return insert_at((stmt.lineno, 0), text)


def insert_after(ctx: FileContext, stmt: ast.stmt, lines: list[str]) -> Edit | None:
    indent = indent_of(ctx, stmt)
    end = getattr(stmt, "end_lineno", None)
    if indent is None or end is None:
        return None
    text = "".join(f"{indent}{line}\n" for line in lines)
    if end < len(ctx.lines):  # a line (maybe the empty rest after the last newline) follows
        return insert_at((end + 1, 0), text)
    return insert_at((end, len(ctx.lines[end - 1])), "\n" + text.rstrip("\n"))


def body_top(ctx: FileContext, body: list[ast.stmt], lines: list[str]) -> Edit | None:
    """``lines`` as the first statements of a block (after a docstring)."""
    index = 0
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        if len(body) == 1:
            return insert_after(ctx, first, lines)
        index = 1
    return insert_before(ctx, body[index], lines)


def replace(ctx: FileContext, node: ast.AST, text: str) -> Edit:
    return replace_node(ctx, node, text)


def add_parameter(
    ctx: FileContext, func: ast.FunctionDef | ast.AsyncFunctionDef, text: str
) -> Edit:
    """``text`` (``device=None``) as the last parameter before ``**kwargs``, keyword-only after
    ``*args``."""
    args = func.args
    if args.kwarg is not None:
        return insert_at(ctx.start(args.kwarg), f"{text}, ")
    params: list[ast.AST] = [*args.posonlyargs, *args.args]
    if args.vararg is not None:
        params.append(args.vararg)
    params += args.kwonlyargs
    defaults = [d for d in [*args.defaults, *args.kw_defaults] if d is not None]
    ends = [*params, *defaults]
    if ends:
        last = max(
            ends, key=lambda n: (getattr(n, "end_lineno", 0), getattr(n, "end_col_offset", 0))
        )
        return insert_at(ctx.end(last), f", {text}")
    # no parameters: `def f():` -> `def f(device=None):`
    line = func.lineno
    col = ctx.lines[line - 1].index("(", ctx.start(func)[1]) + 1
    return insert_at((line, col), text)


def source_of(ctx: FileContext, node: ast.AST) -> str:
    return ctx.text(node)
