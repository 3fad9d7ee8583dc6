"""The code the port adds: device selection, the nested-batch mover, small expression builders.

Kept in one place so that the generated code reads the same everywhere and so that the checks
that make the port idempotent ("is this already ported?") look for exactly what is written here.
"""

from __future__ import annotations

import libcst as cst

MARK = "Added by torchport port"
# What a module or a block holds; libcst's BaseStatement lacks ``leading_lines``.
Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement

PLAIN_SELECTION = """\
# {mark}: the best available accelerator, falling back to the CPU.
{name} = torch.device(
    "cuda"
    if torch.cuda.is_available()
    else "mps"
    if torch.backends.mps.is_available()
    else "cpu"
)
"""

RUNTIME_SELECTION = """\
# {mark}: the best accelerator, else the CPU (TORCHPORT_DEVICE overrides).
{name} = torchport.default_device()
"""

DISTRIBUTED_SELECTION = """\
# {mark} --distributed: one process per device, launched by torchrun.
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
RANK = int(os.environ.get("RANK", "0"))
if torch.cuda.is_available():
    {name} = torch.device("cuda", LOCAL_RANK)
    torch.cuda.set_device({name})
else:
    {name} = torch.device("cpu")
"""

# A barrier first: with gloo, tearing the group down while another rank still runs its last
# collective aborts a process now and then ("terminate called without an active exception").
TEARDOWN = """\
dist.barrier()
dist.destroy_process_group()
"""

BATCH_HELPER = '''\
def to_device(batch, device):
    """Move the tensors in a (nested) batch to ``device`` ({mark})."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return type(batch)({{k: to_device(v, device) for k, v in batch.items()}})
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_device(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch
'''

SELECTION_EXPRESSION = """torch.device(
    "cuda"
    if torch.cuda.is_available()
    else "mps"
    if torch.backends.mps.is_available()
    else "cpu"
)"""


def block(suite: cst.BaseSuite) -> list[Statement]:
    """The statements of an indented block (none for a one-line ``for ...: x``)."""
    if not isinstance(suite, cst.IndentedBlock):
        return []
    return [
        s for s in suite.body if isinstance(s, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    ]


def statements(code: str) -> list[Statement]:
    """Parse ``code`` (one or more statements, comments kept) into statement nodes."""
    module = cst.parse_module(code)
    body = list(module.body)
    if module.header and body:
        body[0] = body[0].with_changes(leading_lines=[*module.header, *body[0].leading_lines])
    return body


def selection(name: str, runtime: bool) -> list[Statement]:
    template = RUNTIME_SELECTION if runtime else PLAIN_SELECTION
    return statements(template.format(mark=MARK, name=name))


def batch_helper() -> list[Statement]:
    return statements(BATCH_HELPER.format(mark=MARK))


def selection_expression(runtime: bool) -> cst.BaseExpression:
    if runtime:
        return cst.parse_expression("torchport.default_device()")
    return cst.parse_expression(SELECTION_EXPRESSION)


def method(receiver: cst.BaseExpression, name: str, *args: cst.Arg) -> cst.Call:
    """``receiver.name(*args)``."""
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(name)), args=args)


def comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def keyword(name: str, value: cst.BaseExpression | str) -> cst.Arg:
    expr = cst.parse_expression(value) if isinstance(value, str) else value
    return cst.Arg(
        value=expr,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def add_args(call: cst.Call, *new: cst.Arg) -> cst.Call:
    """``call`` with ``new`` arguments appended, keeping a multi-line call's layout intact."""
    args = list(call.args)
    if not args or args[-1].comma is cst.MaybeSentinel.DEFAULT:
        return call.with_changes(args=[*args, *new])
    # A call with a trailing comma (one argument per line): the closing comma moves to the end.
    last = args[-1].comma
    between = args[-2].comma if len(args) > 1 else last
    added = [a.with_changes(comma=between) for a in new]
    added[-1] = added[-1].with_changes(comma=last)
    return call.with_changes(args=[*args[:-1], args[-1].with_changes(comma=between), *added])


def has_keyword(call: cst.Call, name: str) -> bool:
    return any(a.keyword is not None and a.keyword.value == name for a in call.args)


def to_device(expr: cst.BaseExpression, device: str, non_blocking: bool = False) -> cst.Call:
    """``expr.to(device)`` (with ``non_blocking=True`` for host-to-device batch copies)."""
    args = [cst.Arg(cst.Name(device))]
    if non_blocking:
        args[0] = args[0].with_changes(comma=comma())
        args.append(keyword("non_blocking", "True"))
    return method(expr, "to", *args)


def assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    target = cst.AssignTarget(target=cst.Name(name))
    return cst.SimpleStatementLine(body=[cst.Assign(targets=[target], value=value)])


def final_method(expr: cst.BaseExpression) -> str | None:
    """The method called last in ``expr`` (``to`` for ``x.float().to(d)``), if it is a call."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        return expr.func.attr.value
    return None


def chain_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The start of a method chain: ``torch.from_numpy(a)`` for ``torch.from_numpy(a).float()``."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and isinstance(expr.func.value, (cst.Call, cst.Subscript))
    ):
        expr = expr.func.value
    return expr


def _break(indent: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), indent=True, last_line=cst.SimpleWhitespace(indent)
    )


def exploded(line: cst.SimpleStatementLine, width: int = 88) -> cst.SimpleStatementLine:
    """``line`` with the arguments of its assigned call one per line when it grew too long.

    The block's own indentation is added by libcst (``indent=True``), so this works at any depth;
    the trailing comma keeps formatters (ruff, black) from joining the lines again.
    """
    small = line.body[0] if len(line.body) == 1 else None
    if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.Call):
        return line
    call = small.value
    code = cst.Module(body=[]).code_for_node(line)
    if len(code.rstrip("\n")) <= width or "\n" in code.rstrip("\n") or not call.args:
        return line
    if any(isinstance(a.value, cst.GeneratorExp) and not a.value.lpar for a in call.args):
        return line  # ``f(x for x in y,)`` does not parse: a bare generator takes no comma
    args = [a.with_changes(comma=cst.Comma(whitespace_after=_break("    "))) for a in call.args]
    args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=_break("")))
    new_call = call.with_changes(whitespace_before_args=_break("    "), args=args)
    return line.with_changes(body=[small.with_changes(value=new_call)])
