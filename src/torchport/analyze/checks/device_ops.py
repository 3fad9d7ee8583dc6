"""Static detectors of ops that meet tensors on two devices, and of layers made in forward.

An op is reported only when one operand evidently lives on the CPU (a factory without
``device=``, ``torch.from_numpy``, a batch never moved, a layer never moved) and another was
evidently moved to a device that may be an accelerator. A 0-dim CPU tensor (a Python number
wrapped by ``torch.tensor``, a full reduction) may meet device tensors, so it never counts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector, last_name
from torchport.analyze.checks.values import assigned_value, collates_elsewhere, is_scalar, made_at
from torchport.analyze.context import is_self_attr, walk_local
from torchport.analyze.edits import location
from torchport.analyze.flow.values import OKind, Origin, Place
from torchport.analyze.flow.vocab import device_operands
from torchport.analyze.infer import keyword
from torchport.findings import Finding, Fix, Location
from torchport.rules import device as R
from torchport.rules import device_ops as RO

_OPS = K.TENSOR_OPS | {
    "torch.masked_select",
    "torch.index_select",
    "torch.take_along_dim",
    "torch.bucketize",
    "torch.searchsorted",
}
_BINARY_METHODS = {
    "masked_fill",
    "masked_fill_",
    "gather",
    "scatter",
    "scatter_",
    "scatter_add",
    "scatter_add_",
    "index_select",
    "add",
    "add_",
    "sub",
    "mul",
    "mul_",
    "div",
    "matmul",
    "mm",
    "bmm",
    "where",
    "expand_as",
}
_WRAPPERS = {"DataParallel", "DistributedDataParallel", "FullyShardedDataParallel"}
_REDUCTIONS = {"sum", "mean", "max", "min", "norm", "prod", "std", "var", "amax", "amin"}
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.MatMult, ast.Pow, ast.FloorDiv)


@dataclass(frozen=True)
class _Operand:
    """One side of an operation between tensors: where it lives and how to name it."""

    node: ast.AST
    device: str  # "cpu" or "accel"
    what: str  # how the message names it


@detector(R.TensorsOnDifferentDevices)
def tensors_on_different_devices(a: Analysis) -> Iterator[Finding]:
    if not a.uses_accelerator:
        return
    reported: set[int] = set()
    for finding, node in _local(a):
        reported.add(id(node))
        yield finding
    yield from _followed(a, reported)
    yield from _unmoved_losses(a)
    yield from _copied_before_move(a)


def _copied_before_move(a: Analysis) -> Iterator[Finding]:
    """``ema = copy.deepcopy(model)`` (or a same-file helper such as ``ModelEMA(model)`` that
    deep-copies its argument), then ``model.to(device)``: the copy keeps its weights on the
    CPU, and an EMA update or an evaluation mixes it with the moved model."""
    if "deepcopy" not in a.source:
        return
    copiers = _copiers(a)
    for call in a.calls:
        name = last_name(call.func)
        if name == "deepcopy" and a.qualname(call.func) == "copy.deepcopy":
            index = 0
        elif name in copiers:
            index = copiers[name]
        else:
            continue
        if len(call.args) <= index or not isinstance(call.args[index], ast.Name):
            continue
        model = call.args[index]
        assert isinstance(model, ast.Name)
        info = a.info(model)
        if info is None or info.kind != K.MODULE or info.device == "accel":
            continue
        move = _later_move(a, model.id, call)
        if move is None or _copy_moved(a, call):
            continue
        yield R.TensorsOnDifferentDevices.finding(
            f"`{a.name(call)}` deep-copies `{model.id}` before `{a.name(move)}` at line "
            f"{move.lineno}: the copy keeps its weights on the CPU and meets the moved model's "
            "tensors; copy after moving the model",
            a.loc(call),
            Fix(f"make the copy after `{model.id}` is moved to the device"),
            related=(a.loc(move),),
        )


def _copiers(a: Analysis) -> dict[str, int]:
    """Same-file functions and classes that deep-copy one of their arguments and never move
    anything (``ModelEMA(model)``): name -> the index of that argument at a call."""
    out: dict[str, int] = {}
    owners: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, int]] = [
        (name, func, 0) for name, func in a.functions.items()
    ]
    for name, cls in a.classes.items():
        init = a.method(cls, "__init__")
        if init is not None:
            owners.append((name, init, 1))  # `self` is not passed at the call
    for name, func, skip in owners:
        text = a.text(func)
        if "deepcopy" not in text or ".to(" in text or ".cuda(" in text:
            continue
        params = [arg.arg for arg in func.args.args][skip:]
        for node in walk_local(func):
            if (
                isinstance(node, ast.Call)
                and a.qualname(node.func) == "copy.deepcopy"
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in params
            ):
                out[name] = params.index(node.args[0].id)
    return out


def _later_move(a: Analysis, name: str, after: ast.Call) -> ast.Call | None:
    """``name.to(...)``/``name.cuda()`` later in the same function, to an accelerator."""
    owner = a.function_of(after)
    for call, _ in a.device_moves:
        func = call.func
        if (
            call.lineno > after.lineno
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == name
            and a.function_of(call) is owner
        ):
            return call
    return None


def _copy_moved(a: Analysis, call: ast.Call) -> bool:
    """Whether the copy itself is moved: ``deepcopy(m).to(device)``, or ``ema.to(device)``
    (or ``ema.module.to(...)``) for the name it is bound to."""
    parent = a.parents.get(call)
    if isinstance(parent, ast.Attribute) and parent.attr in ("to", "cuda"):
        return True
    if not (isinstance(parent, ast.Assign) and isinstance(parent.targets[0], ast.Name)):
        return False
    copy = parent.targets[0].id
    return any(a.text(func.value).split(".")[0] == copy for _, func in a.method_calls("to", "cuda"))


def _unmoved_losses(a: Analysis) -> Iterator[Finding]:
    """``criterion = nn.CrossEntropyLoss(weight=w)`` with a CPU ``w``, never moved, handed to
    another function (a ``train(model, loader, criterion)``): it meets the device outputs
    there, out of sight of the other checks. A loss used where it is made is judged there."""
    for stmt in a.of_type(ast.Assign):
        assert isinstance(stmt, ast.Assign)
        target, made = stmt.targets[0], stmt.value
        if len(stmt.targets) != 1 or not isinstance(target, ast.Name):
            continue
        if not isinstance(made, ast.Call) or not (a.qualname(made.func) or "").endswith("Loss"):
            continue
        owner = a.function_of(stmt) or a.tree
        if target.id not in a.passed_names.get(owner, set()) or _moved(a, target.id, owner):
            continue
        for name in ("weight", "pos_weight"):
            value = keyword(made, name)
            info = a.info(value) if value is not None else None
            # made from host data, or by a helper: nothing puts it on the device
            if value is None or info is None or info.kind != K.TENSOR or info.device == "accel":
                continue
            yield R.TensorsOnDifferentDevices.finding(
                f"`{target.id}` holds `{name}={a.name(value)}`, which nothing puts on the device, "
                "and is never moved, while this file computes on the device: the loss fails on "
                f"device outputs; move it with the model (`{a.name(made)}.to(device)`)",
                a.loc(made),
                Fix("move the loss module to the device: `.to(device)`"),
                related=made_at(a, value) if isinstance(value, ast.Name) else (),
            )


def _unmoved_owner(a: Analysis, origin: Origin) -> list[Origin]:
    """Where the module keeping ``origin`` (a layer or tensor of its ``__init__``) was made, for
    each instance never moved: the line that left it on the CPU."""
    while origin.parent is not None:
        origin = origin.parent
    placement = a.placement
    if origin.kind is not OKind.STATE or origin.cls is None or placement is None:
        return []
    return [i for i in origin.cls.instances if placement.place(i) is Place.HOST]


def _moved(a: Analysis, name: str, owner: ast.AST) -> bool:
    """Whether ``name.to(...)``/``name.cuda()`` appears in ``owner``."""
    return any(
        isinstance(func.value, ast.Name)
        and func.value.id == name
        and (a.function_of(call) or a.tree) is owner
        for call, func in a.method_calls("to", "cuda")
    )


def _followed(a: Analysis, reported: set[int]) -> Iterator[Finding]:
    """The meetings the placement analysis finds by following values across functions: a
    CPU tensor made in a helper, a method or at module level that reaches an op with one on
    the device (each reported once, where they meet, naming where the CPU one was made)."""
    placement = a.placement
    if placement is None:
        return
    for conflict in placement.conflicts:
        node = conflict.meet.node
        if id(node) in reported or conflict.meet.unit.ctx is not a:
            continue
        origins = [o for o in conflict.host if not _reported_where_made(a, o)]
        if not origins:
            continue
        reported.add(id(node))
        made = "; ".join(sorted({o.label for o in origins}))
        host, device = a.name(conflict.expr), a.name(conflict.device[0])
        related = {location(o.unit.ctx, o.node) for o in origins}
        related |= {location(m.unit.ctx, m.node) for o in origins for m in _unmoved_owner(a, o)}
        related |= {a.loc(stmt) for stmt in _attribute_assignments(a, conflict.expr)}
        yield R.TensorsOnDifferentDevices.finding(
            f"`{host}` is on the CPU (made by {made}) while `{device}` is on the device: "
            f"{conflict.meet.what} needs both on one device; create it with `device=` where it "
            "is made, or move it there",
            a.loc(node),
            Fix("create the CPU operand on the device (`device=...`) where it is made"),
            related=tuple(sorted(related, key=_order)),
        )


def _attribute_assignments(a: Analysis, expr: ast.expr) -> list[ast.stmt]:
    """``self.fb = ...`` in the class of ``self.fb``'s method: where the attribute that holds
    the CPU tensor is set (the line to change when it should be a buffer)."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value  # self.cache[k]: the attribute is self.cache
    if not is_self_attr(expr):
        return []
    assert isinstance(expr, ast.Attribute)
    cls = a.class_of(a.function_of(expr) or a.tree)
    if cls is None:
        return []
    return [
        stmt
        for stmt in ast.walk(cls)
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign)
        and any(is_self_attr(t, expr.attr) for t in _targets(stmt))
    ]


def _targets(stmt: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[ast.expr]:
    return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]


def _order(loc: Location) -> tuple[str, int, int]:
    return (loc.path, loc.line, loc.column)


def _reported_where_made(a: Analysis, origin: Origin) -> bool:
    """Made as a plain tensor attribute in a module's ``__init__`` (TP105) or by a factory in
    ``forward`` or its same-class helpers (TP103): reported there, where the fix goes."""
    func = origin.func
    if func is None or func.cls is None or not func.cls.is_module:
        return False
    return func.name == "__init__" or origin.node in a.forward


def _local(a: Analysis) -> Iterator[tuple[Finding, ast.AST]]:
    """The meetings evident within one function (an operand's value read at its own line)."""
    for node, op, operands in _candidates(a):
        host = [o for o in operands if o.device == "cpu"]
        moved = [o for o in operands if o.device == "accel"]
        if not host or not moved:
            continue
        cpu, accel = host[0], moved[0]
        if cpu.node is getattr(node, "func", None):
            message = (
                f"{cpu.what} is called with {accel.what}, which was moved to the device: "
                f"move the layer too (`{op}.to(device)`)"
            )
        else:
            message = (
                f"{cpu.what} is on the CPU while {accel.what} was moved to the device: "
                f"`{op}` needs both on one device; create it with `device=` or move it first"
            )
        finding = R.TensorsOnDifferentDevices.finding(
            message,
            a.loc(node),
            Fix("create the CPU operand on the device (`device=...`) or `.to(device)` it"),
            related=made_at(a, cpu.node),
        )
        yield finding, node


def _candidates(a: Analysis) -> Iterator[tuple[ast.AST, str, list[_Operand]]]:
    hosts = _hosts(a)
    everywhere = a.tree in hosts or any(a.call_named("torch.utils.data.DataLoader"))
    for call in a.calls:
        if not everywhere and (a.function_of(call) or a.tree) not in hosts:
            continue
        operands = _call_operands(a, call)
        if operands is not None:
            yield call, a.name(call.func), operands
    for node in a.of_type(ast.BinOp):
        assert isinstance(node, ast.BinOp)
        if not everywhere and (a.function_of(node) or a.tree) not in hosts:
            continue
        if isinstance(node.op, _ARITHMETIC):
            sides = [_tensor(a, s) for s in (node.left, node.right)]
            yield node, a.name(node), [s for s in sides if s is not None]


def _hosts(a: Analysis) -> set[ast.AST]:
    """Functions (or the module) where a CPU operand can be born: a factory without
    ``device=``, ``torch.from_numpy``, a layer, or a call of a same-file helper function.

    Inferring every operand of every op is the costliest thing `check` could do; ops in
    other functions cannot meet a CPU tensor made here, so they are not looked at.
    """
    out: set[ast.AST] = set()
    for call in a.calls:
        q = a.qualname(call.func)
        if q is None:
            func = call.func
            born = isinstance(func, ast.Name) and (
                func.id in a.functions or func.id in a.module_classes
            )
        elif q in K.FACTORIES:
            born = keyword(call, "device") is None
        else:
            born = q == "torch.from_numpy" or _layer(q)
        if born:
            out.add(a.function_of(call) or a.tree)
    return out


def _layer(q: str) -> bool:
    parts = q.split(".")
    return q.startswith("torch.nn.") and parts[-1][:1].isupper() and parts[2] != "functional"


def _call_operands(a: Analysis, call: ast.Call) -> list[_Operand] | None:
    func = call.func
    q = a.qualname(func)
    if q is not None and (q in _OPS or q.startswith("torch.nn.functional.")):
        return _args(a, call, q)
    if isinstance(func, ast.Attribute) and q is None and func.attr in _BINARY_METHODS:
        receiver = _tensor(a, func.value)
        return [receiver, *_args(a, call)] if receiver is not None else None
    module = a.callee_module(call)
    if module is None:
        return None
    if module.cls is not None and module.cls.endswith("Loss"):
        return [*_args(a, call, f"torch.nn.{module.cls}"), *_loss_weight(a, func, call.lineno)]
    if module.cls in _WRAPPERS:
        return None  # a wrapper lives where the module it wraps does
    if module.device == "cpu" and module.origin and _stays_here(a, func):
        if _places_itself(a, module.cls):
            return None  # its __init__ moves its own layers (`nn.Linear(...).to(device)`)
        layer = _Operand(func, "cpu", f"`{a.name(func)}` ({module.origin}, never moved)")
        return [layer, *_args(a, call)]
    return None  # a model moved to the device: TP102 reports CPU inputs to it


def _places_itself(a: Analysis, name: str | None) -> bool:
    """A module class of this file whose ``__init__`` puts its own parts on a device."""
    cls = a.classes.get(name) if name is not None else None
    init = a.method(cls, "__init__") if cls is not None else None
    if init is None:
        return False
    for node in walk_local(init):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        moves = isinstance(func, ast.Attribute) and func.attr in ("to", "cuda") and node.args
        if moves and K.dtype_name(a.qualname(node.args[0])) is None:
            return True
        if keyword(node, "device") is not None:
            return True
    return False


def _args(a: Analysis, call: ast.Call, callee: str | None = None) -> list[_Operand]:
    """The tensor operands of ``call``, less those ``callee`` accepts on the host."""
    keywords = [(kw.arg, kw.value) for kw in call.keywords if kw.arg is not None]
    out: list[_Operand] = []
    for arg in device_operands(callee, call.args, keywords):
        items = arg.elts if isinstance(arg, ast.List | ast.Tuple) else [arg]
        out += [o for o in (_tensor(a, item) for item in items) if o is not None]
    return out


def _tensor(a: Analysis, node: ast.expr) -> _Operand | None:
    """``node`` as an operand whose device is evident, or None."""
    info = a.info(node)
    if info is None or info.kind != K.TENSOR or info.device not in ("cpu", "accel"):
        return None
    if info.device == "cpu":
        if not (info.origin or info.batch) or _maybe_0dim(a, node):
            return None
        if info.batch and collates_elsewhere(a):
            return None  # a collate_fn may move batches to the device itself
        origin = "" if isinstance(node, ast.Call) else f" ({info.origin or 'a batch'})"
        return _Operand(node, "cpu", f"`{a.name(node)}`{origin}")
    return _Operand(node, "accel", f"`{a.name(node)}`")


def _maybe_0dim(a: Analysis, node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        bound = assigned_value(a, node, node.lineno)
        return bound is not None and _maybe_0dim(a, bound)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if a.qualname(func) in ("torch.tensor", "torch.as_tensor"):
        return bool(node.args) and is_scalar(a, node.args[0])
    if isinstance(func, ast.Attribute) and func.attr in _REDUCTIONS:
        return not node.args and keyword(node, "dim") is None
    return False


def _loss_weight(a: Analysis, func: ast.expr, line: int) -> list[_Operand]:
    """A CPU ``weight=`` tensor held by a loss module that was never moved."""
    criterion = a.info(func)
    if not isinstance(func, ast.Name) or criterion is None or criterion.device == "accel":
        return []
    made = assigned_value(a, func, line)
    if not isinstance(made, ast.Call):
        return []
    out = []
    for name in ("weight", "pos_weight"):
        value = keyword(made, name)
        operand = _tensor(a, value) if value is not None else None
        if operand is not None and operand.device == "cpu":
            what = f"the `{name}` of `{func.id}` ({operand.what})"
            out.append(_Operand(operand.node, "cpu", what))
    return out


def _stays_here(a: Analysis, func: ast.expr) -> bool:
    """The module is never handed to another call (which might move it)."""
    if not isinstance(func, ast.Name):
        return False
    owner = a.function_of(func) or a.tree
    return func.id not in a.passed_names.get(owner, set())


_LAYERS = {
    f"torch.nn.{n}"
    for n in (
        "Linear",
        "Bilinear",
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "ConvTranspose1d",
        "ConvTranspose2d",
        "ConvTranspose3d",
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "LayerNorm",
        "GroupNorm",
        "Embedding",
        "LSTM",
        "GRU",
        "RNN",
        "MultiheadAttention",
        "PReLU",
    )
}


@detector(RO.LayerCreatedInForward)
def layer_created_in_forward(a: Analysis) -> Iterator[Finding]:
    for call in a.calls:
        method = a.forward.get(call)
        if method is None or a.qualname(call.func) not in _LAYERS:
            continue
        parent = a.parents.get(call)
        if isinstance(parent, ast.Attribute) and parent.attr in ("to", "cuda"):
            continue  # made where the input is (a lazily built layer, say)
        yield RO.LayerCreatedInForward.finding(
            f"`{a.name(call)}` in `{method}` builds a new layer, on the CPU and with untrained "
            "weights, at every call: create it once in `__init__` and call it here",
            a.loc(call),
            Fix("move the layer to `__init__` (as `self.<name> = ...`)"),
        )


@detector(RO.PackedLengthsOnDevice)
def packed_lengths_on_device(a: Analysis) -> Iterator[Finding]:
    for call in a.call_named("torch.nn.utils.rnn.pack_padded_sequence"):
        lengths = keyword(call, "lengths") or (call.args[1] if len(call.args) > 1 else None)
        info = a.info(lengths) if lengths is not None else None
        if lengths is None or info is None or info.kind != K.TENSOR or info.device != "accel":
            continue
        hint = f"`{lengths.id}.cpu()`" if isinstance(lengths, ast.Name) else "them unmoved"
        yield RO.PackedLengthsOnDevice.finding(
            f"`{a.name(lengths)}` is on the device, but `pack_padded_sequence` needs its "
            f"lengths on the CPU: pass {hint}",
            a.loc(lengths),
            Fix("pass the lengths on the CPU (`.cpu()`) or as a list"),
        )
