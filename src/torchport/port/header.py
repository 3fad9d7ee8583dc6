"""What the port adds at the top of a file: ``import torch``, the device selection, the mover.

Also the hard-coded devices of a script with no CPU fallback (``.cuda()``, ``"cuda:0"``), which
are turned into the selected device before the placement analysis runs.
"""

from __future__ import annotations

import ast

from torchport.analyze.context import FileContext
from torchport.analyze.edits import insert_at, replace_node
from torchport.analyze.fixer import apply_edits
from torchport.findings import Edit

MARK = "Added by torchport port"
SELECTION = """\
# {mark}: the best available accelerator, falling back to the CPU.
{name} = {expression}
"""
EXPRESSION = """{torch}.device(
    "cuda"
    if {torch}.cuda.is_available()
    else "mps"
    if {torch}.backends.mps.is_available()
    else "cpu"
)"""
RUNTIME_SELECTION = """\
# {mark}: the best accelerator, else the CPU (TORCHPORT_DEVICE overrides).
{name} = torchport.default_device()
"""
HELPER = '''\
def {helper}(batch, device):
    """Move the tensors in a (nested) batch to ``device`` ({mark})."""
    if isinstance(batch, {torch}.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return type(batch)({{k: {helper}(v, device) for k, v in batch.items()}})
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*({helper}(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)({helper}(v, device) for v in batch)
    return batch
'''
BCE_HELPER = '''\
def {name}(loss, input, target, *args, **kwargs):
    """Binary cross-entropy with autocast off (CUDA's autocast refuses it), bfloat16 and
    float16 inputs widened to float32 ({mark})."""
    low = ({torch}.float16, {torch}.bfloat16)
    with {torch}.autocast(input.device.type, enabled=False):
        input = input.float() if input.dtype in low else input
        target = target.float() if target.dtype in low else target
        return loss(input, target, *args, **kwargs)
'''
ACCELERATORS = ("cuda", "mps", "xpu")
FALLBACK_WORDS = ("is_available", "device_count", "torch.accelerator", "default_device")


def torch_name(ctx: FileContext) -> str | None:
    """How the file calls the torch module (``torch``, or ``T`` after ``import torch as T``)."""
    for local, target in ctx.imports.items():
        if target == "torch":
            return local
    return None


def selection(ctx: FileContext, name: str, runtime: bool) -> str:
    if runtime:
        return RUNTIME_SELECTION.format(mark=MARK, name=name)
    expression = EXPRESSION.format(torch=torch_name(ctx) or "torch")
    return SELECTION.format(mark=MARK, name=name, expression=expression)


def helper(ctx: FileContext, name: str) -> str:
    return HELPER.format(mark=MARK, helper=name, torch=torch_name(ctx) or "torch")


def bce_helper(ctx: FileContext, name: str) -> str:
    return BCE_HELPER.format(mark=MARK, name=name, torch=torch_name(ctx) or "torch")


def _after_imports(ctx: FileContext) -> int:
    """The line after the file's leading docstring, ``__future__`` and import statements (a
    notebook's magics, which stand in the analysed text as ``pass``, are passed over)."""
    line = 1
    for index, stmt in enumerate(ctx.tree.body):
        is_doc = index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        if is_doc or isinstance(stmt, ast.Import | ast.ImportFrom):
            line = (stmt.end_lineno or stmt.lineno) + 1
        elif not isinstance(stmt, ast.Pass):
            break
    return line


def header_edits(ctx: FileContext, blocks: list[str], imports: list[str]) -> list[Edit]:
    """``imports`` after the file's imports, then ``blocks`` (selection, helper), spaced."""
    line = _after_imports(ctx)
    edits: list[Edit] = []
    if imports:
        edits.append(insert_at((line, 0), "".join(f"{i}\n" for i in imports)))
    if not blocks:
        return edits
    body = ""
    for block in blocks:
        body += ("\n\n" if block.startswith("def ") else "\n") + block
    following = ctx.lines[line - 1] if line - 1 < len(ctx.lines) else ""
    if following.strip():
        body += "\n\n" if blocks[-1].startswith("def ") else "\n"
    edits.append(insert_at((line, 0), body))
    return edits


# -- hard-coded devices ------------------------------------------------------------------------


def has_fallback(source: str) -> bool:
    return any(word in source for word in FALLBACK_WORDS)


def _accelerator(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split(":")[0] in ACCELERATORS
    return False


def unhardcode(ctx: FileContext, name: str) -> tuple[str, bool]:
    """The source with ``.cuda()``, ``"cuda:0"`` and ``torch.device("cuda")`` turned into
    ``name``, and whether anything was; a no-op in a file that already falls back to the CPU."""
    if has_fallback(ctx.source):
        return ctx.source, False
    edits: list[Edit] = []
    module_level = {id(s.value) for s in ctx.tree.body if isinstance(s, ast.Assign)}
    for call in ctx.calls:
        func = call.func
        qual = ctx.qualname(func)
        if qual == "torch.device" and call.args and isinstance(call.args[0], ast.Constant):
            if id(call) in module_level:
                expression = EXPRESSION.format(torch=torch_name(ctx) or "torch")
                edits.append(replace_node(ctx, call, expression))
            elif _accelerator(call.args[0]):
                edits.append(replace_node(ctx, call, name))
            continue
        if isinstance(func, ast.Attribute) and func.attr == "cuda" and qual is None:
            keep = [ctx.text(k) for k in call.keywords if k.arg == "non_blocking"]
            start = ctx.end(func.value)
            end = ctx.end(call)
            args = ", ".join([name, *keep])
            edits.append(Edit(start[0], start[1], end[0], end[1], f".to({args})"))
            continue
        is_to = isinstance(func, ast.Attribute) and func.attr == "to"
        if is_to and call.args and _accelerator(call.args[0]):
            edits.append(replace_node(ctx, call.args[0], name))
        for kw in call.keywords:
            if kw.arg == "device" and _accelerator(kw.value):
                edits.append(replace_node(ctx, kw.value, name))
    if not edits:
        return ctx.source, False
    return apply_edits(ctx.source, edits)[0], True
