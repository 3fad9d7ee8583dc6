"""What the parameters of a function nobody calls probably hold: read from names and uses.

Such a function is called from outside the analysed files (a library's ``train(model,
loader)``), so its arguments are unknown. A parameter called ``model`` that is called like a
function is a module; one whose ``.shape`` is read is a tensor; ``*_loader`` is a loader.
"""

from __future__ import annotations

import ast

from torchport.analyze import kinds as K
from torchport.analyze.flow import torchapi
from torchport.analyze.flow.interp import Frame, Interp
from torchport.analyze.flow.program import FuncInfo
from torchport.analyze.flow.values import UNKNOWN, Kind, OKind, Place, Val, tensor
from torchport.analyze.walk import descendants

MODULE_NAMES = K.MODEL_NAMES | {
    "G", "D", "criterion", "loss_fn", "loss_func", "loss_function"
}  # fmt: skip
TENSOR_USES = frozenset(
    {"shape", "size", "view", "reshape", "unsqueeze", "squeeze", "dim", "ndim", "transpose",
     "permute", "masked_fill", "new_zeros", "new_ones", "matmul", "float", "long", "sum", "mean",
     "numel", "softmax", "argmax", "detach", "contiguous", "numpy"}
)  # fmt: skip


def param_guess(ip: Interp, func: FuncInfo, param: ast.arg) -> Val:
    name = param.arg
    if param.annotation is not None:
        guessed = torchapi.annotation_value(ip.qualname(func.unit, param.annotation))
        if guessed is not None:
            return _with_origin(ip, func, param, guessed)
    if name in ("self", "cls"):
        return UNKNOWN
    if name in MODULE_NAMES or name.endswith(("model", "_net")):
        return _with_origin(ip, func, param, Val(Kind.MODULE))
    if name in ("optimizer", "optim", "opt"):
        return Val(Kind.OPTIMIZER)
    if name.endswith("loader"):
        return _with_origin(ip, func, param, Val(Kind.LOADER))
    if name in ("device", "dev"):
        return Val(Kind.DEVICE)
    if name in _tensor_used(func):
        return _with_origin(ip, func, param, tensor([]))
    return UNKNOWN


def _with_origin(ip: Interp, func: FuncInfo, param: ast.arg, value: Val) -> Val:
    fr = Frame(func.unit, func, {})
    if value.kind is Kind.LOADER:
        pending = ip.origin(OKind.BATCH, param, fr, Place.HOST, f"a batch from `{param.arg}`")
        # a batch we cannot see into: tensors, or something that holds them
        batch = Val(Kind.UNKNOWN, frozenset([pending]), item=tensor([pending]))
        return Val(Kind.LOADER, item=batch)
    if value.kind not in (Kind.TENSOR, Kind.MODULE):
        return value
    label = f"the parameter `{param.arg}` of `{func.name}`"
    made = ip.origin(OKind.PARAM, param, fr, Place.ANY, label, name=param.arg)
    return Val(value.kind, frozenset([made]))


def _tensor_used(func: FuncInfo) -> set[str]:
    if func.tensor_uses is not None:
        return func.tensor_uses
    out: set[str] = set()
    for node in descendants(func.node):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.attr in TENSOR_USES
        ):
            out.add(node.value.id)
    func.tensor_uses = out
    return out
