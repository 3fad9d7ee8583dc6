"""Static detectors of hard-coded devices and legacy device APIs (TP109-TP114)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.edits import ensure_import, insert_at, replace_node
from torchport.analyze.infer import device_of, keyword
from torchport.analyze.walk import descendants
from torchport.findings import Finding, Fix, Safety
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
    for call, arg in _device_arguments(a):
        literal = _either_branch(arg)
        if literal is not None and ":" in literal:
            yield _index_finding(a, call, arg, literal)
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
