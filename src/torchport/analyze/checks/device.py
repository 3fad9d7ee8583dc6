"""Static detectors of device-placement mistakes (TP1xx)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector, last_name
from torchport.analyze.checks.values import (
    assigned_name,
    assigned_value,
    collates_elsewhere,
    is_scalar,
)
from torchport.analyze.context import Func, is_self_attr, walk_local
from torchport.analyze.edits import add_keyword, ensure_import, insert_at, replace_node
from torchport.analyze.infer import device_of, keyword
from torchport.findings import Edit, Finding, Fix, Safety, Severity
from torchport.rules import device as R

_DISCARDABLE = K.DEVICE_MOVES | set(K.DTYPE_CASTS)
_SAFE_FACTORIES = {
    f"torch.{n}" for n in ["zeros", "ones", "empty", "full", "eye", "arange", "linspace"]
}


@detector(R.ToResultDiscarded)
def to_result_discarded(a: Analysis) -> Iterator[Finding]:
    for call, func in a.method_calls(*_DISCARDABLE):
        stmt = a.parents.get(call)
        if not isinstance(stmt, ast.Expr):
            continue
        recv = a.info(func.value)
        if recv is not None and recv.kind == K.MODULE:
            continue  # a module moves in place
        if (recv is None or recv.kind != K.TENSOR) and not a.flow_tensor(func.value):
            continue
        name = a.name(func.value)
        fix = Fix(f"assign the result: `{name} = {a.name(call)}`", safety=Safety.UNSAFE)
        if isinstance(func.value, ast.Name | ast.Attribute):
            fix = Fix(fix.title, (insert_at(a.start(call), f"{name} = "),), Safety.UNSAFE)
        yield R.ToResultDiscarded.finding(
            f"`{a.name(call)}` returns a new tensor and its result is discarded: `{name}` is "
            "unchanged (only modules move in place)",
            a.loc(call),
            fix,
            variable=name,
        )


@detector(R.InputNotMovedToModelDevice)
def input_not_moved(a: Analysis) -> Iterator[Finding]:
    if not a.device_moves:
        return
    for call in a.calls:
        if not call.args:
            continue
        model = a.callee_module(call)
        if model is None or model.device != "accel" or _moves_its_inputs(a, model.cls):
            continue
        for arg in call.args:
            if not isinstance(arg, ast.Name):
                continue
            info = a.info(arg)
            if info is None or info.kind != K.TENSOR or info.device != "cpu" or not info.origin:
                continue
            if info.batch and collates_elsewhere(a):
                continue  # a collate_fn may move batches to the device itself
            where = f"`{model.target}`" if model.target else "an accelerator"
            fix = Fix(f"move `{arg.id}` to the model's device first", safety=Safety.UNSAFE)
            if model.target and _simple(model.target):
                move = f".to({model.target})"
                fix = Fix(fix.title, (insert_at(a.end(arg), move),), Safety.UNSAFE)
            yield R.InputNotMovedToModelDevice.finding(
                f"`{arg.id}` ({info.origin}) is still on the CPU when passed to "
                f"`{a.name(call.func)}`, which was moved to {where}: move it with "
                f"`{arg.id} = {arg.id}.to({model.target or 'device'})` before the call",
                a.loc(arg),
                fix,
                variable=arg.id,
            )


def _moves_its_inputs(a: Analysis, name: str | None) -> bool:
    """A module class of the file whose ``forward`` moves what it is given (a data
    preprocessor: ``v.to(device, non_blocking=True)``), itself or in a method it calls."""
    cls = a.classes.get(name or "")
    forward = a.method(cls, "forward") if cls is not None else None
    if cls is None or forward is None:
        return False
    bodies = [forward]
    for node in walk_local(forward):
        if isinstance(node, ast.Call) and is_self_attr(node.func):
            helper = a.method(cls, node.func.attr)  # type: ignore[attr-defined]
            bodies += [helper] if helper is not None else []
    return any(
        isinstance(n, ast.Call) and last_name(n.func) in ("to", "cuda")
        for body in bodies
        for n in walk_local(body)
    )


def _simple(text: str) -> bool:
    return text.replace(".", "").replace("_", "").isalnum() or (
        text.startswith(("'", '"')) and len(text) < 20
    )


@detector(R.TensorCreatedInForward)
def tensor_created_in_forward(a: Analysis) -> Iterator[Finding]:
    for call in a.calls:
        method = a.forward.get(call)
        q = a.qualname(call.func)
        if method is None or q not in K.FACTORIES or q in ("torch.as_tensor",):
            continue
        if keyword(call, "device") is not None or keyword(call, "out") is not None:
            continue
        if q == "torch.tensor" and call.args and is_scalar(a, call.args[0]):
            continue  # a 0-dim CPU tensor may meet device tensors: no copy, no sync
        func = a.function_of(call)
        fix = Fix("create it on the input's device with `device=<input>.device`")
        if func is not None and func.name == "forward" and len(func.args.args) > 1:
            first = func.args.args[1].arg
            fix = Fix(
                f"add `device={first}.device`",
                (add_keyword(a, call, f"device={first}.device"),),
                Safety.UNSAFE,
            )
        yield R.TensorCreatedInForward.finding(
            f"`{a.name(call)}` in `{method}` creates a tensor on the CPU at every call, while "
            "the module may run on an accelerator: pass `device=` (an input's `.device`) or "
            "register it as a buffer in `__init__`",
            a.loc(call),
            fix,
        )


@detector(R.CpuTensorThenMoved)
def cpu_tensor_then_moved(a: Analysis) -> Iterator[Finding]:
    for call, func in a.method_calls("to", "cuda"):
        inner = func.value
        if not isinstance(inner, ast.Call):
            continue
        q = a.qualname(inner.func)
        if q not in K.FACTORIES or keyword(inner, "device") is not None or call.keywords:
            continue
        if q == "torch.as_tensor":
            continue  # a view of host data (a NumPy array): one copy either way
        if keyword(inner, "generator") is not None:
            continue  # a seeded CPU generator draws on the CPU: `device=` would fail with it
        if func.attr == "cuda":
            if call.args:
                continue
            device = '"cuda"'
        else:
            if (
                len(call.args) != 1
                or device_of(a.scope(call), call.args[0], call.lineno) != "accel"
            ):
                continue
            device = a.text(call.args[0])
        safety = Safety.SAFE if q in _SAFE_FACTORIES else Safety.UNSAFE
        end_inner, end_call = a.end(inner), a.end(call)
        edits = (
            add_keyword(a, inner, f"device={device}"),
            Edit(end_inner[0], end_inner[1], end_call[0], end_call[1], ""),
        )
        fix = Fix(f"create it there: `device={device}`", edits, safety)
        yield R.CpuTensorThenMoved.finding(
            f"`{a.name(inner)}` is allocated on the CPU and then copied to {device}: "
            f"pass `device={device}` to the factory",
            a.loc(call),
            fix,
        )
    yield from _numpy_indices(a)
    yield from _tables_in_forward(a)


def _tables_in_forward(a: Analysis) -> Iterator[Finding]:
    """``torch.from_numpy(posenc(self.dim, n)).to(device)`` in ``forward``: a table that a
    helper of the file computes with NumPy from sizes alone (no tensor of the call), rebuilt
    and copied to the device at every call."""
    for call, func in a.method_calls("to", "cuda"):
        inner = _unviewed_call(func.value)
        if inner is None or a.forward.get(call) is None:
            continue
        if a.qualname(inner.func) == "torch.from_numpy" and len(inner.args) == 1:
            made, how = inner.args[0], "with NumPy"
        else:
            made, how = inner, "on the host"
        if not isinstance(made, ast.Call):
            continue
        helper = a.own_callee(made)
        if helper is None or not _sizes_only(a, made):
            continue
        related: ast.AST = helper
        if made is inner:  # a helper of torch factories: the first one made on the host
            factory = _host_factory(a, helper)
            if factory is None:
                continue
            related = factory
        where = "" if made is not inner else "on the device (`device=`), or "
        yield R.CpuTensorThenMoved.finding(
            f"`{a.name(inner)}` in `{a.forward[call]}` computes a table {how} from sizes "
            f"alone and copies it to the device at every call: build it {where}once in "
            "`__init__` and register it as a buffer (or cache it per size)",
            a.loc(call),
            Fix("compute the table on the device, or once and keep it as a buffer"),
            related=(a.loc(related),),
        )


def _host_factory(a: Analysis, helper: Func) -> ast.Call | None:
    """The first torch factory ``helper`` calls without ``device=`` (``torch.arange(h)``),
    in a helper that takes no device and moves nothing itself."""
    calls = [n for n in walk_local(helper) if isinstance(n, ast.Call)]
    if any(last_name(c.func) in ("to", "cuda") or keyword(c, "device") for c in calls):
        return None
    return next(
        (c for c in calls if a.qualname(c.func) in K.FACTORIES),
        None,
    )


def _unviewed_call(node: ast.expr) -> ast.Call | None:
    """The call under ``.float()``/``.unsqueeze(0)``… (``torch.from_numpy(t).float()``)."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("float", "half", "double", "unsqueeze", "view", "reshape", "t")
    ):
        node = node.func.value
    return node if isinstance(node, ast.Call) else None


def _sizes_only(a: Analysis, call: ast.Call) -> bool:
    """Whether every argument of ``call`` is a number, a size or a setting: a constant, an
    attribute of ``self`` or of a config, or a name unpacked from a ``.shape``."""
    return all(_a_size(a, arg) for arg in [*call.args, *(k.value for k in call.keywords)])


def _a_size(a: Analysis, arg: ast.expr) -> bool:
    """A constant, a setting, a name unpacked from a ``.shape``, or arithmetic of them
    (``h // 8``)."""
    if isinstance(arg, ast.Constant | ast.Attribute):
        return True
    if isinstance(arg, ast.BinOp):
        return _a_size(a, arg.left) and _a_size(a, arg.right)
    if isinstance(arg, ast.Subscript):  # ``x.shape[2]``
        return isinstance(arg.value, ast.Attribute) and arg.value.attr == "shape"
    if isinstance(arg, ast.Call):  # ``x.size(2)``
        return last_name(arg.func) == "size"
    return isinstance(arg, ast.Name) and _shape_unpacking(a, arg)


def _shape_unpacking(a: Analysis, name: ast.Name) -> bool:
    """``n, k, _ = x.shape`` (or ``n = x.size(1)``, ``n = x.shape[1]``) binds ``name``."""
    owner = a.function_of(name)
    if owner is None:
        return False
    for node in walk_local(owner):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if not any(isinstance(t, ast.Name) and t.id == name.id for t in names):
            continue
        if isinstance(value, ast.Subscript):
            value = value.value
        is_shape = isinstance(value, ast.Attribute) and value.attr == "shape"
        is_size = isinstance(value, ast.Call) and last_name(value.func) == "size"
        return is_shape or is_size
    return False


def _numpy_indices(a: Analysis) -> Iterator[Finding]:
    """``buffer[picks]`` at every step, ``picks = np.random.choice(...)`` and ``buffer`` on the
    device: the indices are drawn on the host and copied to the device for each batch."""
    if "random" not in a.source:
        return
    for node in a.hot:
        if not isinstance(node, ast.Subscript) or not isinstance(node.slice, ast.Name):
            continue
        drawn = assigned_value(a, node.slice, node.lineno)
        if not isinstance(drawn, ast.Call):
            continue
        q = a.qualname(drawn.func) or ""
        if not q.startswith("numpy.random."):
            continue
        info = a.info(node.value)
        if (info is None or info.device != "accel") and not a.placed_on_device(node.value):
            continue
        yield R.CpuTensorThenMoved.finding(
            f"`{a.name(node)}` indexes a tensor on the device with `{node.slice.id}`, drawn by "
            f"`{q.replace('numpy.', 'np.', 1)}` on the host: the indices are copied to the device "
            "at every step; draw them there (`torch.randint(n, (k,), device=...)`, "
            "`torch.randperm(n, device=...)[:k]`)",
            a.loc(node),
            Fix("draw the indices on the device with torch.randint/torch.randperm"),
            related=(a.loc(drawn),),
        )


def _self_assignments(a: Analysis) -> Iterator[tuple[ast.Assign, ast.Attribute, str]]:
    """``self.x = value`` in a module class's methods, with the class name (one scan)."""
    if not a.module_classes:
        return
    owners = {a.classes[name]: name for name in a.module_classes}
    for stmt in a.of_type(ast.Assign):
        assert isinstance(stmt, ast.Assign)
        target = stmt.targets[0]
        if len(stmt.targets) != 1 or not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            continue
        cls = next((up for up in a.ancestors(stmt) if isinstance(up, ast.ClassDef)), None)
        if cls in owners:
            yield stmt, target, owners[cls]


@detector(R.TensorAttributeNotBuffer)
def tensor_attribute_not_buffer(a: Analysis) -> Iterator[Finding]:
    replicated = any(a.call_named("torch.nn.DataParallel"))
    for stmt, target, name in _self_assignments(a):
        func = a.function_of(stmt)
        if func is None:
            continue
        value = stmt.value
        # under DataParallel, a device tensor set by any method (`set_mask(mask)` called by
        # a pruning pass) is left out of the replicas
        if isinstance(value, ast.Call) and replicated and _on_device(a, value):
            if not (_moved_where_read(a, func, target.attr) or _registered(a, func, target.attr)):
                yield _not_replicated(a, stmt, target, name, func)
            continue
        if not _set_up(a, func):
            continue
        if isinstance(value, ast.Call):
            if not _made_on_host(a, value):
                continue
        elif not (  # `emb.cos()[None, None]`: computed from host tensors
            isinstance(value, ast.Subscript | ast.BinOp)
            and (_cpu_tensor(a, value) or a.placed_on_host(value))
        ):
            continue
        start, value_start = a.start(stmt), a.start(stmt.value)
        edits = (
            Edit(*start, *value_start, f'self.register_buffer("{target.attr}", '),
            insert_at(a.end(stmt.value), ")"),
        )
        where = f"`{name}.{func.name}`" + ("" if func.name == "__init__" else " (from `__init__`)")
        yield R.TensorAttributeNotBuffer.finding(
            f"`self.{target.attr}` in {where} is a plain tensor attribute: "
            f"`{name}().to(device)` leaves it on the CPU; use "
            f'`self.register_buffer("{target.attr}", ...)`',
            a.loc(stmt),
            Fix(
                f'register it: `self.register_buffer("{target.attr}", ...)`',
                edits,
                Safety.UNSAFE,
            ),
        )
    yield from _setattr_tensors(a)


def _on_device(a: Analysis, value: ast.Call) -> bool:
    """A tensor put on the device: inferred so, or moved with ``.to(device=<a parameter's or
    input's .device>)``."""
    info = a.info(value)
    if info is not None and info.kind == K.TENSOR and info.device == "accel":
        return True
    target = keyword(value, "device") or (value.args[0] if value.args else None)
    return (
        last_name(value.func) == "to"
        and isinstance(target, ast.Attribute)
        and target.attr == "device"
    )


def _moved_where_read(a: Analysis, func: Func, attr: str) -> bool:
    """``self.<attr>.to(x.device)`` (or ``.type_as(x)``) wherever the class reads it."""
    cls = a.class_of(func)
    reads = [
        n
        for n in (ast.walk(cls) if cls is not None else ())
        if isinstance(n, ast.Attribute) and is_self_attr(n, attr) and isinstance(n.ctx, ast.Load)
    ]
    return bool(reads) and all(
        isinstance(up := a.parents.get(n), ast.Attribute) and up.attr in ("to", "type_as", "cuda")
        for n in reads
    )


def _registered(a: Analysis, func: Func, attr: str) -> bool:
    """``self.register_buffer("<attr>", ...)`` in the class: assigning it later sets the
    buffer, which replicas get."""
    cls = a.class_of(func)
    return cls is not None and any(
        isinstance(n, ast.Call)
        and last_name(n.func) in ("register_buffer", "register_parameter")
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and n.args[0].value == attr
        for n in ast.walk(cls)
    )


def _not_replicated(
    a: Analysis, stmt: ast.Assign, target: ast.Attribute, name: str, func: Func
) -> Finding:
    """A plain tensor attribute put on the device in set-up, in a file that wraps its model
    in ``nn.DataParallel``: each replica gets the parameters and buffers copied to its GPU,
    and this tensor as it is, on the first GPU."""
    return R.TensorAttributeNotBuffer.finding(
        f"`self.{target.attr}` in `{name}.{func.name}` is a plain tensor attribute on the "
        "device: nn.DataParallel copies parameters and buffers to each GPU, not this, so the "
        "replicas on the other GPUs meet it on the first one; use "
        f'`self.register_buffer("{target.attr}", ...)`',
        a.loc(stmt),
        Fix(f'register it: `self.register_buffer("{target.attr}", ...)`'),
    )


def _setattr_tensors(a: Analysis) -> Iterator[Finding]:
    """``setattr(self, f"pos_embed{i}", table)`` in a module's set-up, ``table`` a tensor made
    on the CPU (by a factory or a helper of the file): a plain attribute under another name."""
    if "setattr" not in a.source or "setattr" in a.imports:
        return
    for call in a.calls:
        if not (isinstance(call.func, ast.Name) and call.func.id == "setattr"):
            continue
        func = a.function_of(call)
        cls = a.class_of(func) if func is not None else None
        if func is None or cls is None or cls.name not in a.module_classes:
            continue
        if len(call.args) != 3 or not _is_self(call.args[0]) or not _set_up(a, func):
            continue
        value: ast.expr | None = call.args[2]
        if isinstance(value, ast.Name):
            value = assigned_value(a, value, call.lineno)
        if not isinstance(value, ast.Call):
            continue
        if not (_made_on_host(a, value) or a.placed_on_host(value)):
            continue
        yield R.TensorAttributeNotBuffer.finding(
            f"`{a.name(call)}` in `{cls.name}.{func.name}` sets a plain tensor attribute: "
            f"`{cls.name}().to(device)` leaves it on the CPU; use "
            "`self.register_buffer(name, tensor, persistent=False)`",
            a.loc(call),
            Fix("register it: `self.register_buffer(name, tensor, persistent=False)`"),
            # read under a name built at run time: whether forward moves it is not known
            severity=Severity.WARNING,
        )


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _set_up(a: Analysis, func: Func) -> bool:
    """``__init__``, or a method of the class that ``__init__`` calls (``self.reset()``)."""
    if func.name == "__init__":
        return True
    cls = a.class_of(func)
    init = a.method(cls, "__init__") if cls is not None else None
    return init is not None and any(
        isinstance(n, ast.Call) and is_self_attr(n.func, func.name) for n in walk_local(init)
    )


def _made_on_host(a: Analysis, value: ast.Call) -> bool:
    """A factory or ``torch.from_numpy`` call, or a call evident to return a host tensor."""
    q = a.qualname(value.func)
    return q in K.FACTORIES or q == "torch.from_numpy" or _cpu_tensor(a, value)


def _cpu_tensor(a: Analysis, value: ast.expr) -> bool:
    """A call (a same-file helper, say) evident to return a tensor made on the CPU."""
    info = a.info(value)
    return info is not None and info.kind == K.TENSOR and info.device == "cpu" and info.cls is None


@detector(R.ModulesInPlainContainer)
def modules_in_plain_container(a: Analysis) -> Iterator[Finding]:
    for node, target, name in _self_assignments(a):
        wrapper = _container_wrapper(a, node.value, _appended(a, node, target.attr))
        if wrapper is None or _hidden_reference(a, node):
            continue
        nn, imports = ensure_import(a, "torch.nn")
        edits = (
            *imports,
            insert_at(a.start(node.value), f"{nn}.{wrapper}("),
            insert_at(a.end(node.value), ")"),
        )
        kind = "parameters" if wrapper.startswith("Parameter") else "submodules"
        yield R.ModulesInPlainContainer.finding(
            f"`self.{target.attr}` in `{name}` holds {kind} in a plain "
            f"{'dict' if 'Dict' in wrapper else 'list'}: `.to(device)`, `parameters()` and "
            f"`state_dict()` do not see them; wrap it in `nn.{wrapper}`",
            a.loc(node),
            Fix(f"wrap it in `nn.{wrapper}`", edits, Safety.UNSAFE),
        )


def _hidden_reference(a: Analysis, node: ast.Assign) -> bool:
    """``self._online = [model]``: one module handed to ``__init__``, kept in a list so that
    it stays out of this module's parameters and state dict (an EMA's online model, a
    teacher): the caller owns it and moves it."""
    value, owner = node.value, a.function_of(node)
    if not (isinstance(value, ast.List) and len(value.elts) == 1 and owner is not None):
        return False
    only = value.elts[0]
    return isinstance(only, ast.Name) and only.id in {arg.arg for arg in owner.args.args}


def _appended(a: Analysis, node: ast.Assign, attr: str) -> list[ast.expr]:
    """What ``self.<attr>.append(...)`` adds in the function that assigns ``self.<attr> = []``."""
    value = node.value
    if not (isinstance(value, ast.List) and not value.elts):
        return []
    owner = a.function_of(node)
    return [
        call.args[0]
        for call, func in a.method_calls("append")
        if len(call.args) == 1 and is_self_attr(func.value, attr) and a.function_of(call) is owner
    ]


def _container_wrapper(a: Analysis, value: ast.expr, appended: list[ast.expr]) -> str | None:
    """ModuleList/ModuleDict/ParameterList/ParameterDict when every element is one (the list's
    own, or what is appended to an empty one)."""
    if isinstance(value, ast.List | ast.Tuple) and (value.elts or appended):
        elements, suffix = list(value.elts) or appended, "List"
        if isinstance(value, ast.Tuple):
            return None
    elif isinstance(value, ast.ListComp):
        elements, suffix = [value.elt], "List"
    elif isinstance(value, ast.DictComp):
        elements, suffix = [value.value], "Dict"
    elif isinstance(value, ast.Dict) and value.values:
        keys_ok = all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys)
        if not keys_ok:
            return None
        elements, suffix = list(value.values), "Dict"
    else:
        return None
    infos = [a.info(e) for e in elements]
    if all(i is not None and i.kind == K.MODULE for i in infos):
        return f"Module{suffix}"
    if all(i is not None and i.cls == "Parameter" for i in infos):
        return f"Parameter{suffix}"
    return None


@detector(R.TorchLoadWithoutMapLocation)
def torch_load_without_map_location(a: Analysis) -> Iterator[Finding]:
    saved, every_save_on_host = _host_saves(a)
    if every_save_on_host:
        return  # it reads the host checkpoints it writes (an async checkpointer's)
    for call in a.call_named("torch.load"):
        if (
            keyword(call, "map_location")
            or len(call.args) > 1
            or any(k.arg is None for k in call.keywords)
        ):
            continue
        if call.args and a.text(call.args[0]) in saved:
            continue  # this file wrote it from NumPy or CPU values: nothing to map
        fix = Fix(
            'load onto the CPU: `map_location="cpu"`',
            (add_keyword(a, call, 'map_location="cpu"'),),
            Safety.UNSAFE,
        )
        yield R.TorchLoadWithoutMapLocation.finding(
            f"`{a.name(call)}` restores tensors on the device they were saved from: "
            'pass `map_location="cpu"` (or the target device)',
            a.loc(call),
            fix,
        )


@detector(R.NumpyOfDeviceTensor)
def numpy_of_device_tensor(a: Analysis) -> Iterator[Finding]:
    for call, func in a.method_calls("numpy"):
        if call.args:
            continue
        recv = a.info(func.value)
        if recv is not None and (recv.kind != K.TENSOR or recv.device != "accel"):
            continue
        if recv is None and not a.placed_on_device(func.value):
            continue  # a parameter: unless the calls of this file hand it a device tensor
        name = a.name(func.value)
        where = f"moved to `{recv.target or 'cuda'}`" if recv else "given a device tensor"
        yield R.NumpyOfDeviceTensor.finding(
            f"`{name}` may be on an accelerator ({where}): "
            f"`.numpy()` fails there; call `{name}.cpu().numpy()`",
            a.loc(call),
            Fix(
                "copy it to the host first: `.cpu().numpy()`",
                (insert_at(a.end(func.value), ".cpu()"),),
            ),
        )


def _host_saves(a: Analysis) -> tuple[set[str], bool]:
    """Paths (as written) that this file ``torch.save``s from NumPy or CPU-only values, and
    whether it saves nothing else (its saves include ``Thread(target=torch.save, args=...)``,
    and a value a same-file helper that copies to the host returned)."""
    out: set[str] = set()
    saves = [(call, call.args) for call in a.call_named("torch.save")]
    for call in a.calls:
        target, given = keyword(call, "target"), keyword(call, "args")
        if target is not None and a.qualname(target) == "torch.save":
            saves.append((call, given.elts if isinstance(given, ast.Tuple) else []))
    every = bool(saves)
    for call, args in saves:
        if len(args) == 2 and (
            _on_host(a, args[0], call.lineno, depth=0) or _from_host_copier(a, args[0], call)
        ):
            out.add(a.text(args[1]))
        else:
            every = False
    return out, every


def _from_host_copier(a: Analysis, value: ast.expr, call: ast.Call) -> bool:
    """``value`` is what a same-file helper returned, one that copies to the host and never to
    a device (``host_state = self.preload_tensors(flat)``)."""
    if isinstance(value, ast.Name):
        bound = assigned_value(a, value, call.lineno)
        value = bound if bound is not None else value
    helper = a.own_callee(value) if isinstance(value, ast.Call) else None
    if helper is None or any(a.function_of(move) is helper for move, _ in a.device_moves):
        return False
    return any(_host_copy(node) for node in walk_local(helper))


def _host_copy(node: ast.AST) -> bool:
    """``x.cpu()`` or ``x.to("cpu", ...)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr == "cpu":
        return True
    first = node.args[0] if node.args else keyword(node, "device")
    return node.func.attr == "to" and isinstance(first, ast.Constant) and first.value == "cpu"


def _on_host(a: Analysis, value: ast.expr, line: int, depth: int) -> bool:
    """Whether ``value`` evidently holds only NumPy arrays, CPU tensors and plain Python data."""
    if depth > 3:
        return False
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Dict):
        return all(_on_host(a, v, line, depth + 1) for v in value.values)
    if isinstance(value, ast.List | ast.Tuple):
        return all(_on_host(a, v, line, depth + 1) for v in value.elts)
    if isinstance(value, ast.DictComp):
        return _on_host(a, value.value, line, depth + 1)
    info = a.info(value)
    if info is not None:
        return info.kind == K.NDARRAY or (info.kind == K.TENSOR and info.device == "cpu")
    if isinstance(value, ast.Name):
        bound = assigned_value(a, value, line)
        return bound is not None and _on_host(a, bound, bound.lineno, depth + 1)
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute) and value.func.attr == "cpu":
            return True  # `v.cpu()`, `{k: v.cpu() for ...}`
        # a helper of the file told to put its result on the host (`to_dict(buf, "cpu")`)
        given = [*value.args, *(k.value for k in value.keywords)]
        scope = a.scope(value)
        return a.own_callee(value) is not None and any(
            device_of(scope, arg, line) == "cpu" for arg in given
        )
    return False


_PARAMETERS = {"torch.nn.Parameter", "torch.nn.parameter.Parameter"}
# `.float()` is left out: on the default dtype it returns the Parameter itself
_PARAMETER_MOVES = ("to", "cuda", "half", "double", "bfloat16")
_MOVABLE_ARGS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


@detector(R.ParameterMovedAtCreation)
def parameter_moved_at_creation(a: Analysis) -> Iterator[Finding]:
    if "requires_grad" in a.source:
        yield from _leaf_moved_at_creation(a)
    if "Parameter" not in a.source:
        return
    for call, func in a.method_calls(*_PARAMETER_MOVES):
        made = func.value
        if not isinstance(made, ast.Call) or a.qualname(made.func) not in _PARAMETERS:
            continue
        if func.attr == "to" and _only_to_cpu(a, call):
            continue  # `.to("cpu")` of a CPU Parameter returns the Parameter itself
        yield R.ParameterMovedAtCreation.finding(
            f"`{a.name(call)}` returns a plain tensor, not the Parameter: it is not in "
            "`parameters()` or `state_dict()`, so it is never trained or saved; move or cast "
            "the tensor inside `nn.Parameter(...)`, or move the whole module",
            a.loc(call),
            _nest_move(a, made, call),
        )


def _leaf_moved_at_creation(a: Analysis) -> Iterator[Finding]:
    """``t.requires_grad_().to(device)`` and ``torch.randn(..., requires_grad=True).cuda()``:
    on a GPU the name holds the copy, which is not a leaf (an input optimized in place: an
    adversarial example, a style-transfer image, a learned prompt)."""
    for call, func in a.method_calls("to", "cuda"):
        made = func.value
        if not isinstance(made, ast.Call) or (func.attr == "to" and _only_to_cpu(a, call)):
            continue
        asked = isinstance(made.func, ast.Attribute) and made.func.attr == "requires_grad_"
        given = [*made.args, *(k.value for k in made.keywords)] if asked else []
        if any(isinstance(g, ast.Constant) and g.value is False for g in given):
            continue
        flag = keyword(made, "requires_grad")
        if not (asked or (isinstance(flag, ast.Constant) and flag.value is True)):
            continue
        if not _needs_a_leaf(a, call):
            continue  # an input that only carries the graph (`x.requires_grad_().cuda()`)
        fix = Fix("move first, then ask for gradients: `t.to(device).requires_grad_()`")
        if asked:
            made_text = a.text(made)
            cut = made_text.rfind(".requires_grad_")  # the receiver keeps its parentheses
            move = a.text(call)[len(made_text) :]
            fixed = f"{made_text[:cut]}{move}{made_text[cut:]}"
            fix = Fix(fix.title, (replace_node(a, call, fixed),), Safety.SAFE)
        yield R.ParameterMovedAtCreation.finding(
            f"`{a.name(call)}` is not a leaf on the GPU: the move copies there, and the copy "
            "is what you keep; its `.grad` stays None and an optimizer refuses it (\"can't "
            'optimize a non-leaf Tensor"); move first, then `requires_grad_()`, or make it '
            "with `device=`",
            a.loc(call),
            fix,
        )


def _needs_a_leaf(a: Analysis, call: ast.Call) -> bool:
    """Whether the name ``call`` is assigned to is read for its ``.grad`` or handed to an
    optimizer in the same function (where a copy that is not a leaf breaks)."""
    target = assigned_name(a, call)
    if target is None:
        return False
    for node in walk_local(a.function_of(call) or a.tree):
        if isinstance(node, ast.Attribute) and node.attr == "grad" and _is_name(node.value, target):
            return True
        if isinstance(node, ast.Call) and (a.qualname(node.func) or "").startswith("torch.optim."):
            given = node.args[0] if node.args else None
            items = given.elts if isinstance(given, ast.List | ast.Tuple) else [given]
            if any(item is not None and _is_name(item, target) for item in items):
                return True
    return False


def _is_name(node: ast.expr, name: ast.Name) -> bool:
    return isinstance(node, ast.Name) and node.id == name.id


def _only_to_cpu(a: Analysis, call: ast.Call) -> bool:
    given = [*call.args, *(k.value for k in call.keywords)]
    return len(given) == 1 and device_of(a.scope(call), given[0], call.lineno) == "cpu"


def _nest_move(a: Analysis, made: ast.Call, call: ast.Call) -> Fix:
    """``nn.Parameter(t).to(d)`` -> ``nn.Parameter(t.to(d))``."""
    title = "move the tensor before wrapping it: `nn.Parameter(t.to(...))`"
    if len(made.args) != 1 or not isinstance(made.args[0], _MOVABLE_ARGS):
        return Fix(title)
    move = a.text(call)[len(a.text(made)) :]
    end_made, end_call = a.end(made), a.end(call)
    edits = (
        insert_at(a.end(made.args[0]), move),
        Edit(end_made[0], end_made[1], end_call[0], end_call[1], ""),
    )
    return Fix(title, edits, Safety.UNSAFE)
