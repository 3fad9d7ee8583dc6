"""Calls: of the program's own functions and classes, of modules, and of methods by receiver.

Calls of names from outside the program (torch, NumPy, builtins...) are in :mod:`torchapi`,
methods of values from outside the program in :mod:`methods`.
"""

from __future__ import annotations

import ast

from torchport.analyze.flow import methods, torchapi, vocab
from torchport.analyze.flow.events import ModuleMove
from torchport.analyze.flow.exprs import attribute, evaluate
from torchport.analyze.flow.interp import Frame, Interp
from torchport.analyze.flow.invocation import Arg, Invocation
from torchport.analyze.flow.program import ClassInfo, FuncInfo
from torchport.analyze.flow.values import (
    HOST,
    NONE,
    UNKNOWN,
    Kind,
    OKind,
    Place,
    Val,
    element,
    join,
    join_all,
    seq,
    tensor,
)

MODULE_IN_PLACE = frozenset(
    {"train", "eval", "requires_grad_", "float", "half", "double", "bfloat16", "apply",
     "zero_grad", "share_memory", "register_forward_hook", "register_forward_pre_hook",
     "register_full_backward_hook", "to_empty", "compile"}
)  # fmt: skip
MODULE_TENSOR_LISTS = frozenset(
    {"parameters", "buffers", "state_dict", "named_parameters", "named_buffers"}
)  # fmt: skip
MODULE_LISTS = frozenset({"children", "modules", "named_children", "named_modules"})
SEQ_MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "appendleft"})
PORT_HELPER_MARK = "Added by torchport port"


def call(ip: Interp, fr: Frame, node: ast.Call) -> Val:
    func = node.func
    if isinstance(func, ast.Attribute):
        receiver = evaluate(ip, fr, func.value)
        return method(_invocation(ip, fr, node), receiver, func.attr)
    callee = evaluate(ip, fr, func)
    return call_value(_invocation(ip, fr, node), callee)


def _invocation(ip: Interp, fr: Frame, node: ast.Call) -> Invocation:
    args: list[Arg] = []
    for arg in node.args:
        value = evaluate(ip, fr, arg)
        if not isinstance(arg, ast.Starred):
            args.append((arg, value))
        elif value.parts is not None:
            args.extend((arg.value, part) for part in value.parts)
        else:
            args.append((arg.value, element(value)))
    kwargs: dict[str, Arg] = {}
    star = False
    for kw in node.keywords:
        value = evaluate(ip, fr, kw.value)
        if kw.arg is not None:
            kwargs[kw.arg] = (kw.value, value)
            continue
        star = True
        for name, field in value.fields or ():
            kwargs.setdefault(name, (kw.value, field))
    return Invocation(ip, fr, node, args, kwargs, star)


def call_value(c: Invocation, callee: Val) -> Val:
    ref = callee.ref
    if callee.kind is Kind.QUAL and callee.qual is not None:
        return torchapi.call_qual(c, callee.qual)
    if callee.kind is Kind.FUNC and isinstance(ref, FuncInfo):
        return program_call(c, ref, callee.bound)
    if callee.kind is Kind.CLASS and isinstance(ref, ClassInfo):
        values = [v for _, v in c.args]
        return c.ip.instantiate(c.fr, c.node, ref, values, {k: v for k, (_, v) in c.kwargs.items()})
    if callee.kind is Kind.MODULE:
        return module_call(c, callee)
    if callee.kind is Kind.OBJECT and isinstance(ref, ClassInfo):
        dunder = ref.method("__call__")
        return program_call(c, dunder, callee) if dunder is not None else UNKNOWN
    if callee.kind is Kind.UNKNOWN and any(o.kind is OKind.LOAD for o in callee.origins):
        # a whole pickled model loaded with torch.load, then called
        return module_call(c, Val(Kind.MODULE, callee.origins))
    return UNKNOWN


def program_call(c: Invocation, func: FuncInfo, bound: Val | None) -> Val:
    if _is_port_helper(func):
        return torchapi.call_qual(c, "torchport.to_device")
    values = [v for _, v in c.args]
    named = {k: v for k, (_, v) in c.kwargs.items()}
    return c.ip.call_function(c.fr, c.node, func, values, kwargs=named, bound=bound)


def _is_port_helper(func: FuncInfo) -> bool:
    """The nested-batch mover an earlier ``torchport port`` added to this file."""
    node = func.node
    if isinstance(node, ast.Lambda):
        return False
    return PORT_HELPER_MARK in (ast.get_docstring(node) or "")


def module_call(c: Invocation, module: Val) -> Val:
    """``model(x)``: a program module runs its ``forward``; a torch module's input meets it."""
    cls = module.ref
    if module.qual in vocab.WRAPPERS:
        _moved_by_wrapper(c, module)
    if isinstance(cls, ClassInfo):
        forward = cls.method("forward")
        if forward is not None:
            return program_call(c, forward, module)
    inputs = [(e, part) for e, v in c.device_operands(module.qual) for part in _flat(v)]
    c.meet([(c.node.func, module), *inputs], f"`{c.text(c.node.func)}(...)`", module=True)
    return torchapi.module_output(module, [v for _, v in c.everything])


def _flat(value: Val, depth: int = 3) -> list[Val]:
    """The tensors a module gets in a tuple (an LSTM's ``(h, c)``) as well as plain ones."""
    if value.kind is Kind.SEQ and value.parts is not None and depth > 0:
        return [inner for part in value.parts for inner in _flat(part, depth - 1)]
    return [value]


def _moved_by_wrapper(c: Invocation, module: Val) -> None:
    """DataParallel and DDP (with ``device_ids``) copy their inputs to the module's device."""
    from torchport.analyze.flow.exprs import moved_to

    label = f"the inputs `{c.text(c.node.func)}` copies to its device"
    made = c.origin(OKind.MOVE, Place.ANY, label)
    made.follows = module.origins or None
    c.args = [(e, moved_to(v, made)) for e, v in c.args]
    c.kwargs = {k: (e, moved_to(v, made)) for k, (e, v) in c.kwargs.items()}


def method(c: Invocation, receiver: Val, name: str) -> Val:
    """``receiver.name(...)`` by what the receiver is."""
    kind, ref = receiver.kind, receiver.ref
    if kind is Kind.QUAL:
        assert isinstance(c.node.func, ast.Attribute)
        return call_value(c, attribute(c.ip, c.fr, c.node.func, receiver))
    if name == "__init__" and isinstance(ref, ClassInfo):
        init = ref.method("__init__")
        return program_call(c, init, receiver.bound or receiver) if init is not None else NONE
    if kind is Kind.TENSOR or (kind is Kind.UNKNOWN and name in torchapi.TENSORISH):
        return methods.tensor_method(c, receiver, name)
    if isinstance(ref, ClassInfo) and kind in (Kind.MODULE, Kind.OBJECT, Kind.DATASET, Kind.CLASS):
        found = _program_method(c, receiver, ref, name)
        if found is not None:
            return found
    if kind is Kind.MODULE:
        return _module_method(c, receiver, name)
    if kind is Kind.SEQ:
        return _seq_method(c, receiver, name)
    return methods.other_method(c, receiver, name)


def _program_method(c: Invocation, receiver: Val, cls: ClassInfo, name: str) -> Val | None:
    found = cls.method(name)
    if found is not None:
        if receiver.kind is Kind.CLASS:
            if found.is_method and c.args:  # Class.method(instance, ...)
                first, c.args = c.args[0][1], c.args[1:]
                return program_call(c, found, first)
            return program_call(c, found, None)
        return program_call(c, found, receiver.bound or receiver)
    held = cls.attr(name)
    if held is not None and held.kind is not Kind.HOST:
        return call_value(c, held)
    registering = name in ("register_buffer", "register_parameter", "add_module")
    if cls.is_module and registering and len(c.args) >= 2:
        _register(cls, c.args[0][0], c.args[1][1])
        return NONE
    return None


def _register(cls: ClassInfo, key: ast.expr, value: Val) -> None:
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or cls.state is None:
        return
    if value.kind is Kind.MODULE:
        for o in value.origins:
            if o.kind is OKind.MODEL and o.parent is None:
                o.parent = cls.state
        cls.attrs[key.value] = value
    else:
        cls.attrs[key.value] = tensor([cls.state], dtype=value.dtype)


def _module_method(c: Invocation, module: Val, name: str) -> Val:
    if name in ("to", "cuda", "cpu"):
        place, follows = torchapi.target_place(c, name)
        if place is not None or follows:
            made = c.origin(OKind.MOVE, place or Place.ANY, f"`{c.text()}`")
            if follows:
                made.follows = follows
            c.ip.events.moves[id(c.node)] = ModuleMove(c.node, c.fr.unit, module, made.written)
            for o in module.origins:
                c.ip.events.placed.setdefault(o, set()).add(made)
        return module
    if name in MODULE_IN_PLACE:
        return module
    if name == "load_state_dict":
        return HOST
    if name in MODULE_TENSOR_LISTS:
        inner = tensor(module.origins)
        if name.startswith("named_"):
            inner = seq(None, (HOST, inner))
        return Val(Kind.SEQ, item=inner)
    if name in MODULE_LISTS:
        inner = Val(Kind.MODULE, module.origins)
        return seq(seq(None, (HOST, inner)) if name.startswith("named_") else inner)
    if name == "forward":
        return module_call(c, module)
    return UNKNOWN


def _seq_method(c: Invocation, receiver: Val, name: str) -> Val:
    if name in SEQ_MUTATORS and c.args:
        added = c.args[-1][1]
        if name == "extend":
            added = element(added)
        elif name == "update":
            added = join_all(v for _, v in added.fields) if added.fields else element(added)
        assert isinstance(c.node.func, ast.Attribute)
        _rebind_receiver(c, c.node.func.value, join(receiver, seq(added)))
        return NONE
    if name in ("pop", "get", "setdefault", "popleft"):
        return element(receiver) if receiver.item is not None or receiver.parts else UNKNOWN
    if name == "items":
        return seq(seq(None, (HOST, element(receiver))))
    if name == "values":
        return seq(element(receiver))
    if name == "keys":
        return seq(HOST)
    if name == "copy":
        return receiver
    return HOST if name in ("index", "count") else UNKNOWN


def _rebind_receiver(c: Invocation, owner: ast.expr, updated: Val) -> None:
    """``xs.append(v)``: ``xs`` now also holds ``v`` (lists are mutated, not rebound)."""
    if isinstance(owner, ast.Name):
        c.fr.env[owner.id] = updated
    elif isinstance(owner, ast.Attribute):
        base = evaluate(c.ip, c.fr, owner.value)
        if isinstance(base.ref, ClassInfo):
            base.ref.attrs[owner.attr] = updated
