"""Mixed precision: ``torch.cuda.amp`` becomes ``torch.amp``; ``--amp bf16`` adds autocast.

Both are text edits: the deprecated names are replaced in place, and ``--amp bf16`` puts a
``with torch.autocast(...)`` line above the forward pass and loss of each training step and
indents those lines, leaving ``backward()`` outside, as it must be.
"""

from __future__ import annotations

import ast

from torchport.analyze.context import FileContext
from torchport.analyze.edits import insert_at, replace_node
from torchport.analyze.flow.values import Kind, Val
from torchport.findings import Edit

DEPRECATED = {
    "torch.cuda.amp.autocast": ("cuda", ("enabled", "dtype", "cache_enabled")),
    "torch.cuda.amp.GradScaler": ("cuda", ()),
    "torch.cpu.amp.autocast": ("cpu", ("enabled", "dtype", "cache_enabled")),
    "torch.cpu.amp.GradScaler": ("cpu", ()),
}
AUTOCAST = "with {torch}.autocast(device_type={device}.type, dtype={torch}.bfloat16):"


def modernise(ctx: FileContext) -> list[Edit]:
    """``torch.cuda.amp.X(...)`` -> ``torch.amp.X("cuda", ...)``, with the same meaning."""
    edits: list[Edit] = []
    for node in ctx.of_type(ast.ImportFrom):
        assert isinstance(node, ast.ImportFrom)
        if node.module in ("torch.cuda.amp", "torch.cpu.amp") and not node.level:
            line = ctx.lines[node.lineno - 1]
            start = line.find(node.module, ctx.start(node)[1])
            if start >= 0:
                edits.append(
                    Edit(node.lineno, start, node.lineno, start + len(node.module), "torch.amp")
                )
    for call in ctx.calls:
        qual = ctx.qualname(call.func) or _unimported_torch(ctx, call.func)
        if qual not in DEPRECATED:
            continue
        device, positional = DEPRECATED[qual]
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Attribute):
            amp = call.func.value  # torch.cuda.amp -> torch.amp, keeping torch's local name
            if isinstance(amp.value, ast.Attribute):
                edits.append(replace_node(ctx, amp, f"{ctx.text(amp.value.value)}.amp"))
        first = f'"{device}", ' if call.args or call.keywords else f'"{device}"'
        parts = [*call.args, *(k for k in call.keywords)]
        where = ctx.start(parts[0]) if parts else (ctx.end(call)[0], ctx.end(call)[1] - 1)
        edits.append(insert_at(where, first))  # before a keyword given to the first argument
        for index, arg in enumerate(call.args):
            if index < len(positional):
                edits.append(insert_at(ctx.start(arg), f"{positional[index]}="))
    return edits


def _unimported_torch(ctx: FileContext, func: ast.expr) -> str | None:
    """``torch.cuda.amp.autocast`` spelt out in a file that does not import torch (yet: the
    port adds the import, and porting twice must change nothing)."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if not (isinstance(func, ast.Name) and func.id == "torch") or "torch" in ctx.imports:
        return None
    return ".".join(["torch", *parts])


def bf16_edits(ctx: FileContext, values: dict[int, Val], device: str) -> list[Edit]:
    """Edits that put each training step's forward pass and loss under bf16 autocast."""
    if "autocast" in ctx.source:
        return []
    modules = _module_calls(ctx, values)
    torch = next((local for local, target in ctx.imports.items() if target == "torch"), "torch")
    header = AUTOCAST.format(torch=torch, device=device)
    edits: list[Edit] = []
    for loop in ctx.of_type(ast.For, ast.AsyncFor, ast.While):
        edits += _wrap_step(ctx, loop.body, modules, header)  # type: ignore[attr-defined]
    return edits


def _module_calls(ctx: FileContext, values: dict[int, Val]) -> set[int]:
    """ids of the statements that call a module (a model or a loss)."""
    out: set[int] = set()
    for stmt in ast.walk(ctx.tree):
        if not isinstance(stmt, ast.stmt):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                callee = values.get(id(node.func))
                if callee is not None and callee.kind is Kind.MODULE:
                    out.add(id(stmt))
                    break
    return out


def _wrap_step(
    ctx: FileContext, body: list[ast.stmt], modules: set[int], header: str
) -> list[Edit]:
    backward = next((i for i, s in enumerate(body) if ".backward(" in ctx.text(s)), None)
    first = next((i for i, s in enumerate(body) if id(s) in modules), None)
    if backward is not None and first == backward:
        return _split_backward(ctx, body[backward], header)
    if backward is None or first is None or first >= backward:
        return []
    step = body[first:backward]
    if not all(isinstance(s, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Expr) for s in step):
        return []  # a `with` around control flow could change what runs under autocast
    start, end = step[0].lineno, step[-1].end_lineno or step[-1].lineno
    if any(_multiline_string(n) for s in step for n in ast.walk(s)):
        return []
    prefix = ctx.lines[start - 1][: ctx.start(step[0])[1]]
    if prefix.strip():
        return []
    edits = [insert_at((start, 0), f"{prefix}{header}\n")]
    edits += [
        insert_at((line, 0), "    ")
        for line in range(start, end + 1)
        if ctx.lines[line - 1].strip()
    ]
    return edits


def _split_backward(ctx: FileContext, stmt: ast.stmt, header: str) -> list[Edit]:
    """``loss_fn(model(x), y).backward()`` in one statement: the loss is computed under
    autocast into a name of its own, and ``backward()`` runs outside, as it must."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "backward"
        and not call.args
        and not call.keywords
    ):
        return []
    prefix = ctx.lines[stmt.lineno - 1][: ctx.start(stmt)[1]]
    if prefix.strip() or any(_multiline_string(n) for n in ast.walk(stmt)):
        return []
    name = _free_name(ctx, stmt, "loss")
    computed = ctx.text(call.func.value)
    text = f"{header}\n{prefix}    {name} = {computed}\n{prefix}{name}.backward()"
    return [replace_node(ctx, stmt, text)]


def _free_name(ctx: FileContext, stmt: ast.stmt, wanted: str) -> str:
    """``wanted``, or ``wanted_2``... where the function around ``stmt`` does not use it."""
    scope: ast.AST = ctx.function_of(stmt) or ctx.tree
    taken = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)}
    if wanted not in taken:
        return wanted
    number = 2
    while f"{wanted}_{number}" in taken:
        number += 1
    return f"{wanted}_{number}"


def _multiline_string(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.lineno != node.end_lineno
    )
