"""Mixed precision: ``torch.cuda.amp`` becomes ``torch.amp``; ``--amp bf16`` adds autocast.

Both are text edits: the deprecated names are replaced in place, and ``--amp bf16`` puts a
``with torch.autocast(...)`` line above the forward pass and loss of each training step and
indents those lines, leaving ``backward()`` outside, as it must be. A step is found in any
block (a loop, a function, an optimizer's closure) by its ``backward()``; its forward pass may
call a module, its ``forward`` or a function of the program that does. Writes such as
``index_add_`` get their source cast to the dtype of the tensor they write into, which
autocast would otherwise make differ.
"""

from __future__ import annotations

import ast

from torchport.analyze.context import FileContext
from torchport.analyze.edits import insert_at, replace_node
from torchport.analyze.flow.program import ClassInfo, FuncInfo
from torchport.analyze.flow.values import Kind, Val
from torchport.findings import Edit

DEPRECATED = {
    "torch.cuda.amp.autocast": ("cuda", ("enabled", "dtype", "cache_enabled")),
    "torch.cuda.amp.GradScaler": ("cuda", ()),
    "torch.cpu.amp.autocast": ("cpu", ("enabled", "dtype", "cache_enabled")),
    "torch.cpu.amp.GradScaler": ("cpu", ()),
}
AUTOCAST = "with {torch}.autocast(device_type={device}.type, dtype={torch}.bfloat16):"
NO_STEP = (
    "--amp bf16 found no forward pass before this backward() in its block: put the forward "
    "passes and the loss that it differentiates under torch.autocast yourself"
)


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


def bf16_edits(
    ctx: FileContext, values: dict[int, Val], device: str
) -> tuple[list[Edit], list[ast.stmt]]:
    """Edits that put each training step's forward pass and loss under bf16 autocast, and the
    ``backward()`` calls whose forward pass is elsewhere (left without autocast)."""
    if "autocast" in ctx.source:
        return [], []
    modules = _module_calls(ctx, values)
    torch = next((local for local, target in ctx.imports.items() if target == "torch"), "torch")
    header = AUTOCAST.format(torch=torch, device=device)
    edits: list[Edit] = []
    missed: list[ast.stmt] = []
    covered: set[int] = set()
    for body in _blocks(ctx.tree):
        more, left, nested = _wrap_steps(ctx, body, modules, header)
        edits += more
        missed += left
        covered |= nested
    return edits, [stmt for stmt in missed if id(stmt) not in covered]


# CUDA's autocast refuses binary cross-entropy ("unsafe to autocast"): under the autocast the
# port adds, each call goes through a helper the port adds, which turns autocast off for it.
BCE_FUNCTIONS = frozenset(
    {"torch.nn.functional.binary_cross_entropy", "torch.binary_cross_entropy"}
)
BCE_HELPER = "bce_without_autocast"


def bce_calls(ctx: FileContext, values: dict[int, Val]) -> list[Edit]:
    """``F.binary_cross_entropy(p, y)`` -> ``bce_without_autocast(F.binary_cross_entropy, p,
    y)``, and the same for a call of an ``nn.BCELoss``. Every call of the file is rewritten:
    outside autocast the helper computes what the call did (inputs of float32 and wider are
    passed as they are)."""
    edits: list[Edit] = []
    for call in ctx.calls:
        parts = [*call.args, *call.keywords]
        if not parts or not _is_bce(ctx, call, values):
            continue
        edits.append(replace_node(ctx, call.func, BCE_HELPER))
        edits.append(insert_at(ctx.start(parts[0]), f"{ctx.text(call.func)}, "))
    return edits


def _is_bce(ctx: FileContext, call: ast.Call, values: dict[int, Val]) -> bool:
    if ctx.qualname(call.func) in BCE_FUNCTIONS:
        return True
    callee = values.get(id(call.func))
    return (
        callee is not None
        and callee.kind is Kind.MODULE
        and (callee.qual or "").rsplit(".", 1)[-1] == "BCELoss"
    )


# In-place and indexed writes whose source must have the dtype of the tensor they write into:
# under autocast one of them is often bfloat16 and the other float32. method -> source index.
SAME_DTYPE_WRITES = {
    "index_add_": 2, "index_add": 2, "index_copy_": 2, "index_copy": 2,
    "scatter_add_": 2, "scatter_add": 2, "scatter_reduce_": 2, "scatter_reduce": 2,
    "scatter_": 2, "scatter": 2, "masked_scatter_": 1, "masked_scatter": 1,
}  # fmt: skip
SOURCE_KEYWORDS = ("source", "src")


def same_dtype_writes(ctx: FileContext, values: dict[int, Val]) -> list[Edit]:
    """``out.index_add_(0, i, src)`` -> ``out.index_add_(0, i, src.to(out.dtype))``: the same
    numbers without autocast, and no dtype mismatch under it (``out`` made like an autocast
    output is bfloat16, ``src`` float32, or the other way round)."""
    if "autocast" in ctx.source:
        return []
    edits: list[Edit] = []
    for call in ctx.calls:
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in SAME_DTYPE_WRITES:
            continue
        if not _plain_name(func.value):
            continue  # an expression would be computed twice
        source = _source_arg(call, SAME_DTYPE_WRITES[func.attr])
        if source is None or _is_cast(source):
            continue
        value = values.get(id(source))
        if value is None or value.kind is not Kind.TENSOR or value.scalar:
            continue  # a number (``1.0 - smoothing``) is written as it is
        cast = f".to({ctx.text(func.value)}.dtype)"
        if isinstance(source, ast.Name | ast.Attribute | ast.Call | ast.Subscript):
            edits.append(insert_at(ctx.end(source), cast))
        else:
            edits += [insert_at(ctx.start(source), "("), insert_at(ctx.end(source), f"){cast}")]
    return edits


def _plain_name(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _source_arg(call: ast.Call, index: int) -> ast.expr | None:
    if len(call.args) > index:
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg in SOURCE_KEYWORDS), None)


def _is_cast(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("to", "type_as")
    )


def _blocks(tree: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list: a module's, a function's, a loop's, a branch's, a handler's."""
    out: list[list[ast.stmt]] = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                out.append(body)
    return out


def _module_calls(ctx: FileContext, values: dict[int, Val]) -> set[int]:
    """ids of the statements (compound ones too) that run a forward pass: they call a module
    (a model or a loss), its ``forward``, or a function of the program that does."""
    runs: dict[int, bool] = {}

    def runs_forward(node: ast.AST) -> bool:
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            callee = values.get(id(call.func))
            if (callee is not None and callee.kind is Kind.MODULE) or _calls_forward(call, values):
                return True
            func = callee.ref if callee is not None else _method(call.func, values)
            if isinstance(func, FuncInfo):
                key = id(func.node)
                if key not in runs:
                    runs[key] = False  # a recursive function: what its other calls do
                    runs[key] = runs_forward(func.node)
                if runs[key]:
                    return True
        return False

    return {id(s) for s in ast.walk(ctx.tree) if isinstance(s, ast.stmt) and runs_forward(s)}


def _calls_forward(call: ast.Call, values: dict[int, Val]) -> bool:
    """``module.forward(...)``, the module's own or one it inherits."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "forward"):
        return False
    owner = values.get(id(func.value))
    return owner is not None and owner.kind is Kind.MODULE


def _method(func: ast.expr, values: dict[int, Val]) -> FuncInfo | None:
    """The method of the program that ``module.name`` names (``self.train_step``...)."""
    if not isinstance(func, ast.Attribute):
        return None
    owner = values.get(id(func.value))
    if owner is None or owner.kind is not Kind.MODULE or not isinstance(owner.ref, ClassInfo):
        return None
    return owner.ref.methods.get(func.attr)


def _wrap_steps(
    ctx: FileContext, body: list[ast.stmt], modules: set[int], header: str
) -> tuple[list[Edit], list[ast.stmt], set[int]]:
    """Each ``X.backward()`` statement of ``body`` closes a step: the statements from the
    first one that calls a module (after the previous step) up to it go under autocast. A
    loop or function with a ``backward()`` inside is a step of its own block; a branch
    (``if optimizer is not None: loss.backward()``) closes the step before it. Returns the
    edits, the ``backward()`` statements without a forward pass before them, and the ids of
    those whose step was closed by the branch around them."""
    edits: list[Edit] = []
    missed: list[ast.stmt] = []
    covered: set[int] = set()
    first: int | None = None
    for index, stmt in enumerate(body):
        if ".backward(" not in ctx.text(stmt):
            if first is None and id(stmt) in modules:
                first = index
            continue
        if not _is_backward(stmt):
            if first is not None and isinstance(stmt, ast.If | ast.With | ast.Try):
                wrapped = _wrap(ctx, body[first:index], header)
                edits += wrapped
                if wrapped:
                    covered |= {id(s) for s in ast.walk(stmt) if isinstance(s, ast.stmt)}
            first = None  # the steps inside are their own block's
            continue
        if id(stmt) in modules:
            more = _split_backward(ctx, stmt, header)
        elif first is not None:
            more = _wrap(ctx, body[first:index], header)
        else:
            more = []
        edits += more
        if not more:
            missed.append(stmt)
        first = None
    return edits, missed, covered


def _is_backward(stmt: ast.stmt) -> bool:
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "backward"
    )


def _wrap(ctx: FileContext, step: list[ast.stmt], header: str) -> list[Edit]:
    """``with autocast:`` above ``step``, whose lines are indented under it."""
    if any(isinstance(n, ast.Yield | ast.YieldFrom | ast.Await) for s in step for n in ast.walk(s)):
        return []  # a generator's or coroutine's step would suspend under autocast
    if any(_multiline_string(n) for s in step for n in ast.walk(s)):
        return []
    start, end = step[0].lineno, step[-1].end_lineno or step[-1].lineno
    prefix = ctx.lines[start - 1][: ctx.start(step[0])[1]]
    rest = ctx.lines[end - 1][ctx.end(step[-1])[1] :].strip()
    if prefix.strip() or (rest and not rest.startswith("#")):
        return []  # statements that share a line with others (``a; b``) stay as they are
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
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return []
    if call.args or call.keywords:
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
