"""Static detectors of hard-coded devices and legacy device APIs (TP109-TP114)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector, last_name
from torchport.analyze.checks.ranks import device_indices
from torchport.analyze.checks.settings import setting_default
from torchport.analyze.checks.values import parameter_defaults, passes_argument
from torchport.analyze.edits import ensure_import, insert_at, replace_node
from torchport.analyze.infer import device_of, keyword
from torchport.analyze.walk import descendants
from torchport.findings import Edit, Finding, Fix, Safety, Severity
from torchport.rules import device_api as R


def _cuda_literal(node: ast.expr | None) -> str | None:
    text = node.value if isinstance(node, ast.Constant) else None
    if isinstance(text, str) and (text == "cuda" or text.startswith("cuda:")):
        return text
    return None


def _device_arguments(a: Analysis) -> Iterator[tuple[ast.Call, ast.expr]]:
    """Expressions used as a device: ``torch.device(x)``, ``.to(x)``, ``device=x``."""
    for call in a.calls:
        func = call.func
        if (a.qualname(func) == "torch.device" and call.args) or (
            isinstance(func, ast.Attribute) and func.attr == "to" and call.args
        ):
            yield call, call.args[0]
        dev = keyword(call, "device")
        if dev is not None:
            yield call, dev


def _either_branch(node: ast.expr) -> str | None:
    """A CUDA literal, also as a branch of ``"cuda:0" if ... else "cpu"``."""
    if isinstance(node, ast.IfExp):
        return _either_branch(node.body) or _either_branch(node.orelse)
    return _cuda_literal(node)


@detector(R.HardCodedCuda)
def hard_coded_cuda(a: Analysis) -> Iterator[Finding]:
    if a.has_fallback:
        return
    for call, arg in _device_arguments(a):
        if _cuda_literal(arg) is None:
            continue
        yield R.HardCodedCuda.finding(
            f"`{a.name(call)}` hard-codes the CUDA device and the file never checks "
            "`torch.cuda.is_available()`: it crashes on machines without an NVIDIA GPU",
            a.loc(arg),
            Fix('pick the device once: `device = "cuda" if torch.cuda.is_available() else "cpu"`'),
        )
    for call, func in a.method_calls("cuda"):
        if a.qualname(func) is not None:
            continue
        yield R.HardCodedCuda.finding(
            f"`{a.name(call)}` moves to CUDA unconditionally and the file never checks "
            "`torch.cuda.is_available()`: it crashes on machines without an NVIDIA GPU",
            a.loc(call),
            Fix("move with `.to(device)` where `device` falls back to the CPU"),
        )


@detector(R.HardCodedDeviceIndex)
def hard_coded_device_index(a: Analysis) -> Iterator[Finding]:
    reported: set[int] = set()
    for call, arg in _device_arguments(a):
        literal = _either_branch(arg)
        if literal is not None and ":" in literal:
            reported.update(id(n) for n in descendants(arg))
            yield _index_finding(a, call, arg, literal)
    if any(a.call_named("torch.distributed.init_process_group")):
        # a process of a distributed job: "cuda:0" set once (a constant, a config default,
        # a map_location) is one GPU for every rank
        for node in a.of_type(ast.Constant):
            text = node.value  # type: ignore[attr-defined]
            if not (isinstance(text, str) and _INDEXED.match(text)) or id(node) in reported:
                continue
            if _a_setting(a, node):
                yield R.HardCodedDeviceIndex.finding(
                    f"`{text!r}` names one GPU in a program that starts a process group: "
                    "every process that uses it works on that GPU; take the index from "
                    "`LOCAL_RANK`",
                    a.loc(node),
                    Fix('use `torch.device("cuda", int(os.environ["LOCAL_RANK"]))`'),
                )
        yield from _index_from_a_setting(a)
    for call in a.calls:
        q = a.qualname(call.func)
        is_method = isinstance(call.func, ast.Attribute) and call.func.attr == "cuda" and q is None
        indexed = (
            (q == "torch.device" and len(call.args) == 2)
            or (is_method and len(call.args) == 1)
            or (q == "torch.cuda.set_device" and len(call.args) == 1)
        )
        index = call.args[-1] if indexed and call.args else None
        if isinstance(index, ast.Constant) and isinstance(index.value, int):
            yield _index_finding(a, call, index, a.text(call))


_INDEXED = re.compile(r"cuda:\d+\Z")


def _index_from_a_setting(a: Analysis) -> Iterator[Finding]:
    """``torch.cuda.set_device(cfg.device_id)`` where ``device_id: int = 0`` is a config's
    default that nothing in the file sets from the process's rank."""
    seen: set[int] = set()
    for where, index in device_indices(a):
        found = setting_default(a, index)
        if found is None or index.lineno in seen:
            continue
        default, written = found
        if type(default.value) is not int:
            continue
        seen.add(index.lineno)
        yield R.HardCodedDeviceIndex.finding(
            f"`{a.name(where)}` takes GPU {default.value} from a setting nothing in the file "
            f"changes (`{a.name(index)}`, {default.value} at line {written.lineno}): every "
            "process of the job works on that GPU; set it from `LOCAL_RANK`",
            a.loc(index),
            Fix('set it from `int(os.environ["LOCAL_RANK"])` in each process'),
            related=(a.loc(written),),
        )


def _a_setting(a: Analysis, node: ast.AST) -> bool:
    """Where a program sets its device once: a module-level or class-level binding (a
    config's field), a parameter's default, or a ``map_location=``."""
    child = node
    for up in a.ancestors(node):
        if isinstance(up, ast.keyword):
            return up.arg == "map_location"
        if isinstance(up, ast.arguments):
            return child in up.defaults or child in up.kw_defaults
        if isinstance(up, ast.stmt):
            owner = a.parents.get(up)
            return isinstance(up, ast.Assign | ast.AnnAssign) and isinstance(
                owner, ast.Module | ast.ClassDef
            )
        child = up
    return False


def _index_finding(a: Analysis, call: ast.Call, node: ast.expr, what: str) -> Finding:
    return R.HardCodedDeviceIndex.finding(
        f"`{a.name(call)}` fixes the device index ({what}): under torchrun every process "
        "would use the same GPU; take the index from `LOCAL_RANK`",
        a.loc(node),
        Fix('use `int(os.environ.get("LOCAL_RANK", 0))` as the index'),
    )


@detector(R.DeviceComparedToCuda)
def device_compared_to_cuda(a: Analysis) -> Iterator[Finding]:
    for node in a.of_type(ast.Compare):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
            continue
        if not isinstance(node.ops[0], ast.Eq | ast.NotEq):
            continue
        sides = (node.left, node.comparators[0])
        for dev, other in (sides, sides[::-1]):
            if not (isinstance(dev, ast.Attribute) and dev.attr == "device"):
                continue
            literal = other
            if isinstance(other, ast.Call) and a.qualname(other.func) == "torch.device":
                literal = other.args[0] if len(other.args) == 1 and not other.keywords else other
            elif not _is_tensor_or_module(a, dev.value):
                continue  # `self.device == "cuda"` may well be a string
            if not (isinstance(literal, ast.Constant) and literal.value == "cuda"):
                continue
            edits = (
                insert_at(a.end(dev), ".type"),
                replace_node(a, other, '"cuda"'),
            )
            yield R.DeviceComparedToCuda.finding(
                f"`{a.name(node)}` never matches a GPU tensor: its device carries an index "
                f'(`cuda:0`); compare `{a.name(dev)}.type` with `"cuda"`',
                a.loc(node),
                Fix(f'compare the type: `{a.name(dev)}.type == "cuda"`', edits, Safety.UNSAFE),
            )
            break


def _is_tensor_or_module(a: Analysis, node: ast.expr) -> bool:
    info = a.info(node)
    return info is not None and info.kind in (K.TENSOR, K.MODULE)


_LEGACY = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "ByteTensor": "uint8",
    "CharTensor": "int8",
    "ShortTensor": "int16",
    "IntTensor": "int32",
    "LongTensor": "int64",
    "BoolTensor": "bool",
}


@detector(R.LegacyTensorConstructor)
def legacy_tensor_constructor(a: Analysis) -> Iterator[Finding]:
    for call in a.calls:
        q = a.qualname(call.func) or ""
        parts = q.split(".")
        cuda = q.startswith("torch.cuda.") and len(parts) == 3
        if not (q == "torch.Tensor" or (parts[-1] in _LEGACY and (len(parts) == 2 or cuda))):
            continue
        if q.split(".")[0] != "torch":
            continue
        fix = Fix("use `torch.tensor(data, dtype=...)` or a factory such as `torch.empty(size)`")
        dtype = _LEGACY.get(parts[-1])
        if (
            dtype
            and len(call.args) == 1
            and not call.keywords
            and isinstance(call.args[0], ast.List)
        ):
            torch, imports = ensure_import(a, "torch")
            device = ', device="cuda"' if cuda else ""
            text = f"{torch}.tensor({a.text(call.args[0])}, dtype={torch}.{dtype}{device})"
            # a CPU-typed constructor ignores torch.set_default_device; torch.tensor obeys it
            safety = Safety.SAFE if cuda else Safety.UNSAFE
            fix = Fix(
                f"use `torch.tensor(..., dtype=torch.{dtype})`",
                (*imports, replace_node(a, call, text)),
                safety,
            )
        yield R.LegacyTensorConstructor.finding(
            f"`{a.name(call)}` uses the legacy constructor `{q}`: use `torch.tensor(data, "
            "dtype=..., device=...)` or a factory with `device=`",
            a.loc(call),
            fix,
            # its tensor follows the module or the device: the old spelling is all that is left
            severity=Severity.INFO if dtype and _follows_the_device(a, call) else None,
        )
    if a.uses_accelerator and "Tensor" in a.source:
        yield from _legacy_casts(a)


# the method that casts to each legacy type's dtype and keeps the device
_CASTS = {
    "FloatTensor": "float", "DoubleTensor": "double", "HalfTensor": "half",
    "BFloat16Tensor": "bfloat16", "ByteTensor": "byte", "CharTensor": "char",
    "ShortTensor": "short", "IntTensor": "int", "LongTensor": "long", "BoolTensor": "bool",
}  # fmt: skip


def _legacy_casts(a: Analysis) -> Iterator[Finding]:
    """``targets.type(torch.LongTensor)`` in a file that runs on an accelerator: a CPU type,
    so a device tensor is copied to the host (and meets device tensors there next)."""
    for call, func in a.method_calls("type"):
        if len(call.args) != 1 or call.keywords:
            continue
        arg = call.args[0]
        name = arg.value if isinstance(arg, ast.Constant) else a.qualname(arg)
        if not (isinstance(name, str) and _legacy_cpu_type(name)):
            continue
        cast = _CASTS[name.rsplit(".", 1)[-1]]
        start, end = a.end(func.value), a.end(call)
        yield R.LegacyTensorConstructor.finding(
            f"`{a.name(call)}` converts to the CPU type `{name}`: on a GPU it also copies the "
            f"tensor to the host; `.{cast}()` changes the dtype and keeps the device",
            a.loc(call),
            Fix(
                f"use `.{cast}()`",
                (Edit(start[0], start[1], end[0], end[1], f".{cast}()"),),
                Safety.UNSAFE,
            ),
        )


def _follows_the_device(a: Analysis, call: ast.Call) -> bool:
    """``register_buffer("idx", torch.LongTensor(i).view(n, n))``, ``nn.Parameter(...)``,
    ``torch.LongTensor(i).to(device)``: the tensor is moved with its module or at once."""
    node: ast.AST = call
    parent = a.parents.get(node)
    while isinstance(parent, ast.Attribute) and isinstance(a.parents.get(parent), ast.Call):
        if parent.attr in ("to", "cuda"):
            return True
        node = a.parents[parent]  # a method of the result: `.view(n, n)`, `.long()`
        parent = a.parents.get(node)
    if not isinstance(parent, ast.Call) or node not in parent.args:
        return False
    return last_name(parent.func) == "register_buffer" or a.qualname(parent.func) in (
        "torch.nn.Parameter",
        "torch.nn.parameter.Parameter",
    )


@detector(R.SetDefaultTensorType)
def set_default_tensor_type(a: Analysis) -> Iterator[Finding]:
    for call in a.call_named("torch.set_default_tensor_type"):
        yield R.SetDefaultTensorType.finding(
            f"`{a.name(call)}` is deprecated: use `torch.set_default_dtype` (and "
            "`torch.set_default_device` if you really want every tensor on a GPU)",
            a.loc(call),
            Fix("use `torch.set_default_dtype(...)`"),
        )


@detector(R.CudaTensorInDataset)
def cuda_tensor_in_dataset(a: Analysis) -> Iterator[Finding]:
    for name in a.dataset_classes:
        for node in descendants(a.classes[name]):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            scope = a.scope(node)
            on_device = (
                isinstance(func, ast.Attribute) and func.attr == "cuda" and a.qualname(func) is None
            )
            if isinstance(func, ast.Attribute) and func.attr == "to" and node.args:
                on_device = device_of(scope, node.args[0], node.lineno) == "accel"
            if keyword(node, "device") is not None:
                on_device = (
                    on_device or device_of(scope, keyword(node, "device"), node.lineno) == "accel"
                )
            if on_device:
                yield R.CudaTensorInDataset.finding(
                    f"`{a.name(node)}` in dataset `{name}` puts data on an accelerator: CUDA "
                    "cannot start in DataLoader worker processes; return CPU tensors and move "
                    "the batch in the training loop",
                    a.loc(node),
                    Fix("return CPU tensors; move batches in the training loop"),
                )


_DEVICE_TYPES = ("cuda", "mps", "xpu")


@detector(R.DeviceComparedToTypeString)
def device_compared_to_type_string(a: Analysis) -> Iterator[Finding]:
    if "device" not in a.source:
        return
    for node in a.of_type(ast.Compare):
        assert isinstance(node, ast.Compare)
        if len(node.ops) != 1 or not isinstance(node.ops[0], ast.Eq | ast.NotEq):
            continue
        left, right = node.left, node.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
        if not (isinstance(right, ast.Constant) and right.value in _DEVICE_TYPES):
            continue
        device = _device_text(left, a, str(right.value))
        if device is None or _indexed_alternative(a, node, str(right.value)):
            continue
        yield R.DeviceComparedToTypeString.finding(
            f'`{a.text(node)}` is False for a device with an index ("{right.value}:0"), so '
            f"the GPU takes the other branch; compare its type: "
            f'`torch.device({device}).type == "{right.value}"`',
            a.loc(node),
            Fix("compare the device's type, not its text"),
        )


def _device_text(node: ast.expr, a: Analysis, kind: str) -> str | None:
    """The source of the device in ``str(device)`` or ``f"{device}"`` (the text of a device),
    or of a name or attribute called ``...device`` that the file sets to an indexed device
    somewhere (``device: str = "cuda:0"``); None for anything else. A bare ``device`` is
    often a device type by contract (torch's own ``autocast.device``)."""
    stringified = True
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "str"
        and len(node.args) == 1
    ):
        node = node.args[0]
    elif isinstance(node, ast.JoinedStr) and len(node.values) == 1:
        value = node.values[0]
        if not isinstance(value, ast.FormattedValue):
            return None
        node = value.value
    else:
        stringified = False
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    if not isinstance(name, str) or not name.endswith("device"):
        return None
    if not stringified and not _set_to_an_indexed_device(a, node, name, kind):
        return None
    return ast.unparse(node)


def _indexed_alternative(a: Analysis, compare: ast.Compare, kind: str) -> bool:
    """``x == "cuda:0" or x == "cuda"``: the indexed form is handled beside it."""
    parent = a.parents.get(compare)
    if not isinstance(parent, ast.BoolOp):
        return False
    return any(
        isinstance(c, ast.Constant) and str(c.value).startswith(f"{kind}:")
        for value in parent.values
        if isinstance(value, ast.Compare)
        for c in value.comparators
    )


def _set_to_an_indexed_device(a: Analysis, used: ast.expr, name: str, kind: str) -> bool:
    """Whether the file gives ``name`` (an attribute or field anywhere, a variable in the
    function that reads it) a value with an index: ``"cuda:0"``, ``f"cuda:{rank}"``."""
    scope = a.function_of(used) if isinstance(used, ast.Name) else None
    for node in a.of_type(ast.Assign, ast.AnnAssign):
        if isinstance(used, ast.Name) and a.function_of(node) is not scope:
            continue
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        named = [t.id if isinstance(t, ast.Name) else getattr(t, "attr", None) for t in targets]
        if name not in named or value is None:
            continue
        for part in ast.walk(value):
            first = part.values[0] if isinstance(part, ast.JoinedStr) and part.values else part
            if isinstance(first, ast.Constant) and str(first.value).startswith(f"{kind}:"):
                return True
    return False


@detector(R.LegacyTensorTypeCheck)
def legacy_tensor_type_check(a: Analysis) -> Iterator[Finding]:
    if "Tensor" not in a.source:
        return
    for call in a.calls:
        func = call.func
        if isinstance(func, ast.Name) and func.id == "isinstance" and len(call.args) == 2:
            types = call.args[1]
            named = types.elts if isinstance(types, ast.Tuple) else [types]
            legacy = [t for t in named if _legacy_cpu_type(a.qualname(t))]
            if legacy and not any((a.qualname(t) or "").startswith("torch.cuda.") for t in named):
                yield _type_check(a, call, a.text(legacy[0]))
    for node in a.of_type(ast.Compare):
        assert isinstance(node, ast.Compare)
        if len(node.ops) != 1 or not isinstance(node.ops[0], ast.Eq | ast.NotEq):
            continue
        for side, other in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
            if (
                isinstance(side, ast.Call)
                and not side.args
                and not side.keywords
                and isinstance(side.func, ast.Attribute)
                and side.func.attr == "type"
            ):
                text = other.value if isinstance(other, ast.Constant) else None
                if isinstance(text, str) and _legacy_cpu_type(text):
                    yield _type_check(a, node, text)


def _legacy_cpu_type(name: str | None) -> bool:
    parts = (name or "").split(".")
    return len(parts) == 2 and parts[0] == "torch" and parts[1] in _LEGACY


def _type_check(a: Analysis, node: ast.AST, legacy: str) -> Finding:
    dtype = _LEGACY[legacy.rsplit(".", 1)[-1]]
    return R.LegacyTensorTypeCheck.finding(
        f"`{a.text(node)}` is False for a tensor on the GPU (a `torch.cuda."
        f"{legacy.rsplit('.', 1)[-1]}`): the program takes its other branch there; test "
        f"`x.dtype == torch.{dtype}`",
        a.loc(node),
        Fix(f"test the dtype: `x.dtype == torch.{dtype}`"),
    )


@detector(R.BareCudaBesideChosenDevice)
def bare_cuda_beside_chosen_device(a: Analysis) -> Iterator[Finding]:
    if ".cuda()" not in a.source or "set_device" in a.source or "CUDA_VISIBLE" in a.source:
        return
    chosen = _chosen_by_index(a)
    if chosen is None:
        return
    for call, func in a.method_calls("cuda"):
        if call.args or call.keywords or a.qualname(func) is not None:
            continue
        yield R.BareCudaBesideChosenDevice.finding(
            f"`{a.name(call)}` moves to the current GPU (GPU 0), while this file runs on the "
            f"GPU it picks by index (`{a.text(chosen)}`, line {chosen.lineno}) without making "
            "it current: elsewhere than GPU 0 the two meet on different GPUs; move with "
            "`.to(device)`",
            a.loc(call),
            Fix("move with `.to(device)` (or `.to(other.device)`)"),
            related=(a.loc(chosen),),
        )


def _chosen_by_index(a: Analysis) -> ast.Call | None:
    """``torch.device(f"cuda:{i}")`` or ``torch.device("cuda", i)`` with a computed index."""
    for call in a.call_named("torch.device"):
        if len(call.args) == 2 and not isinstance(call.args[1], ast.Constant):
            return call
        first = call.args[0] if len(call.args) == 1 else None
        if isinstance(first, ast.IfExp):
            first = first.body
        if (
            isinstance(first, ast.JoinedStr)
            and len(first.values) == 2
            and isinstance(first.values[0], ast.Constant)
            and first.values[0].value == "cuda:"
        ):
            return call
    return None


@detector(R.HostDeviceDefault)
def host_device_default(a: Analysis) -> Iterator[Finding]:
    if "device" not in a.source or not a.uses_accelerator:
        return
    for helper in {*a.functions.values(), *_methods(a)}:
        param = _host_default(helper)
        if param is None or not _places_with(helper, param):
            continue
        for call in a.calls_of(helper):
            if a.own_callee(call) is not helper or passes_argument(call, helper, param):
                continue
            if not _device_at_hand(a, call):
                continue
            yield R.HostDeviceDefault.finding(
                f"`{a.name(call)}` leaves `{param}` at its default, the CPU: "
                f"`{helper.name}` (line {helper.lineno}) puts what it makes or moves there, "
                f"while this code works with a device; pass `{param}=` explicitly",
                a.loc(call),
                Fix(f"pass `{param}=` the device the caller works on"),
                related=(a.loc(helper),),
            )


def _methods(a: Analysis) -> Iterator[ast.FunctionDef]:
    for cls in a.classes.values():
        yield from (m for m in cls.body if isinstance(m, ast.FunctionDef))


def _host_default(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The parameter naming a device whose default is the CPU (``device="cpu"``,
    ``device=torch.device("cpu")``)."""
    for param, given in parameter_defaults(func).items():
        if "device" not in param.lower():
            continue
        value = given.args[0] if isinstance(given, ast.Call) and given.args else given
        if isinstance(value, ast.Constant) and value.value == "cpu":  # or torch.device("cpu")
            return param
    return None


def _places_with(func: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> bool:
    """Whether ``func`` moves something with ``.to(param)`` or makes it with
    ``device=param`` (not ``map_location=param``: loading on the CPU first is a choice)."""
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        given = [*node.args[:1]] if last_name(node.func) in ("to", "cuda") else []
        given += [k.value for k in node.keywords if k.arg == "device"]
        if any(isinstance(g, ast.Name) and g.id == param for g in given):
            return True
    return False


def _device_at_hand(a: Analysis, call: ast.Call) -> bool:
    """Whether the calling function, or its class's ``__init__``, has a device: a
    parameter, a name or an attribute named so."""
    owner = a.function_of(call)
    if owner is None:
        return False
    scopes: list[ast.AST] = [owner]
    cls = a.class_of(owner)
    init = a.method(cls, "__init__") if cls is not None else None
    scopes += [init] if init is not None else []
    for scope in scopes:
        for node in ast.walk(scope):
            name = (
                node.arg if isinstance(node, ast.arg)
                else node.id if isinstance(node, ast.Name)
                else node.attr if isinstance(node, ast.Attribute)
                else ""
            )  # fmt: skip
            if "device" in name.lower():
                return True
    return False
