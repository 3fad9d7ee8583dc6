"""Static detectors of ops CUDA refuses where the CPU runs them: integer matrix products,
integer average pooling and bilinear/bicubic resizing of uint8 images (TP321), binary
cross-entropy under autocast (TP322), and an autocast given a device where it takes a device
type (TP324)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.checks.dtype import autocast_blocks
from torchport.analyze.checks.values import assigned_value, module_value
from torchport.analyze.context import is_self_attr
from torchport.analyze.edits import replace_node
from torchport.analyze.hot import reached_from
from torchport.analyze.infer import OF_VALUE, keyword
from torchport.findings import Finding, Fix, Safety
from torchport.rules import amp as A
from torchport.rules import dtype as R

_INTEGERS = frozenset({"int8", "int16", "int32", "int64", "uint8"})
_MATMULS = frozenset({"torch.matmul", "torch.mm", "torch.bmm"})
_MATMUL_METHODS = ("matmul", "mm", "bmm")
_SMOOTH_MODES = frozenset({"bilinear", "bicubic", "trilinear"})


@detector(R.NoDeviceKernelForDtype)
def no_device_kernel_for_dtype(a: Analysis) -> Iterator[Finding]:
    if not a.uses_accelerator:
        return
    for left, right, node in _products(a):
        sides = [a.info(left), a.info(right)]
        if not all(s is not None and s.kind == K.TENSOR and s.dtype in _INTEGERS for s in sides):
            continue
        if all(s is not None and s.device == "cpu" for s in sides):
            continue  # both evidently stay on the host, where the product exists
        dtype = sides[0].dtype if sides[0] is not None else "int64"
        yield R.NoDeviceKernelForDtype.finding(
            f"`{a.name(node)}` multiplies two {dtype} tensors: CUDA has no integer matrix "
            "product (\"addmm_cuda\" not implemented for 'Long'); multiply in float32 and "
            "cast back, or count with index_add_/bincount",
            a.loc(node),
            Fix("multiply float32 copies (`.float()`) and cast the product back"),
        )
    yield from _uint8_resizes(a)
    yield from _integer_pools(a)
    yield from _qr_under_autocast(a)


def _integer_on_device(a: Analysis, node: ast.expr) -> str | None:
    """The integer dtype of ``node`` when it may be on the device: inferred where it is made,
    or followed across the file (``mask = (seg == c).long()`` of a batch moved there)."""
    info = a.info(node)
    if info is not None and info.kind == K.TENSOR:
        dtype, on_device = info.dtype, info.device != "cpu"
    else:
        dtype, on_device = a.flow_dtype(node), a.placed_on_device(node)
    return dtype if dtype in _INTEGERS and on_device else None


_POOLS = {
    "torch.nn.functional.avg_pool2d": "average-pools",
    "torch.nn.functional.avg_pool3d": "average-pools",
    "torch.nn.functional.max_pool2d": "max-pools",
}


def _integer_pools(a: Analysis) -> Iterator[Finding]:
    """``F.avg_pool2d(mask.long(), k, divisor_override=1)``, ``F.max_pool2d(ids, 3)``: the CPU
    pools int64, CUDA's kernels take floating dtypes only (pytorch/pytorch#139115, #107412)."""
    for call in a.call_named(*_POOLS):
        dtype = _integer_on_device(a, call.args[0]) if call.args else None
        if dtype is None:
            continue
        pools = _POOLS[a.qualname(call.func) or ""]
        yield R.NoDeviceKernelForDtype.finding(
            f"`{a.name(call)}` {pools} an {dtype} tensor: CUDA has no integer "
            "kernel for it (the CPU has); pool a float copy (`.float()`) and round back",
            a.loc(call),
            Fix("pool `x.float()` (sums stay exact in float32 below 2**24)"),
        )


def _products(a: Analysis) -> Iterator[tuple[ast.expr, ast.expr, ast.AST]]:
    """``x @ y``, ``torch.matmul(x, y)`` and ``x.matmul(y)``: both operands and the node."""
    if "@" in a.source:
        for node in a.of_type(ast.BinOp):
            assert isinstance(node, ast.BinOp)
            if isinstance(node.op, ast.MatMult):
                yield node.left, node.right, node
    for call in a.call_named(*_MATMULS):
        if len(call.args) == 2:
            yield call.args[0], call.args[1], call
    for call, func in a.method_calls(*_MATMUL_METHODS):
        if len(call.args) == 1 and a.qualname(func) is None:
            yield func.value, call.args[0], call


def _uint8_resizes(a: Analysis) -> Iterator[Finding]:
    for call in a.call_named("torch.nn.functional.interpolate"):
        mode = keyword(call, "mode")
        if not (isinstance(mode, ast.Constant) and mode.value in _SMOOTH_MODES) or not call.args:
            continue
        if _integer_on_device(a, call.args[0]) != "uint8":
            continue
        yield R.NoDeviceKernelForDtype.finding(
            f"`{a.name(call)}` resizes a uint8 image with mode {mode.value!r}: CUDA has no "
            "uint8 kernel for it (the CPU has); resize a float copy (`.float()`) and round back",
            a.loc(call),
            Fix("resize `x.float()` and cast back with `.round().to(torch.uint8)`"),
        )


# QR, and the low-rank decompositions that run it on a matmul's output
_QR_USERS = ("torch.pca_lowrank", "torch.svd_lowrank", "torch.linalg.qr", "torch.qr")


def _qr_under_autocast(a: Analysis) -> Iterator[Finding]:
    """QR reached from a CUDA autocast region: autocast leaves QR's input in float16 (the
    matmul before it casts down) and CUDA's QR has no half kernel (pytorch/pytorch#99710)."""
    if "autocast" not in a.source or not any(a.call_named(*_QR_USERS)):
        return
    reach = {
        block: reached_from(a, [block.body]) for block, call in autocast_blocks(a) if _on_cuda(call)
    }
    off = [block for block, call in autocast_blocks(a) if _disabled(call)]
    for call in a.call_named(*_QR_USERS):
        block = next((b for b, under in reach.items() if call in under), None)
        if block is None or any(_inside(call, region) for region in off):
            continue
        yield R.NoDeviceKernelForDtype.finding(
            f"`{a.name(call)}` runs under the autocast block at line {block.lineno}: CUDA "
            "autocast hands its QR a float16 matrix, and CUDA's QR has no half kernel "
            "(\"geqrf_cuda\" not implemented for 'Half'); run it with autocast disabled on a "
            "float32 copy",
            a.loc(call),
            Fix(
                "wrap it in `with torch.autocast(device.type, enabled=False):` and pass `x.float()`"
            ),
            related=(a.loc(block),),
        )


_BCE = ("torch.nn.functional.binary_cross_entropy", "torch.binary_cross_entropy")


@detector(A.BinaryCrossEntropyUnderAutocast)
def binary_cross_entropy_under_autocast(a: Analysis) -> Iterator[Finding]:
    if "autocast" not in a.source or (
        "binary_cross_entropy" not in a.source and "BCELoss" not in a.source
    ):
        return
    blocks = [block for block, call in autocast_blocks(a) if _on_cuda(call)]
    if not blocks:
        return
    under = reached_from(a, [block.body for block in blocks])
    off = [block for block, call in autocast_blocks(a) if _disabled(call)]
    for call in a.calls:
        if call not in under or any(_inside(call, block) for block in off):
            continue
        if a.qualname(call.func) in _BCE:
            what = f"`{a.name(call)}`"
        else:
            module = a.callee_module(call)
            if module is None or module.cls != "BCELoss":
                continue
            what = f"`{a.name(call)}` (an nn.BCELoss)"
        made = _loss_made_at(a, call)
        yield A.BinaryCrossEntropyUnderAutocast.finding(
            f"{what} runs under the autocast block at line {blocks[0].lineno}: CUDA autocast "
            "refuses binary cross-entropy (unsafe in float16); use "
            "binary_cross_entropy_with_logits (BCEWithLogitsLoss) on the logits",
            a.loc(call),
            Fix("drop the sigmoid and use F.binary_cross_entropy_with_logits"),
            related=() if made is None else (a.loc(made),),
        )


def _loss_made_at(a: Analysis, call: ast.Call) -> ast.expr | None:
    """The ``nn.BCELoss()`` that ``self.loss_fn(...)`` or ``criterion(...)`` calls, where the
    file makes it: the line to change to ``BCEWithLogitsLoss``."""
    func = call.func
    if isinstance(func, ast.Name):
        made = assigned_value(a, func, call.lineno)
    elif is_self_attr(func):
        assert isinstance(func, ast.Attribute)
        owner = a.function_of(call)
        cls = a.class_of(owner) if owner is not None else None
        found = a.attr_assignments(cls).get(func.attr, []) if cls is not None else []
        made = found[-1][1] if found else None
    else:
        made = None
    return made if isinstance(made, ast.Call) else None


def _on_cuda(call: ast.Call) -> bool:
    """An autocast that may be CUDA's: not ``device_type="cpu"`` nor ``enabled=False``."""
    device = keyword(call, "device_type") or (call.args[0] if call.args else None)
    if _disabled(call):
        return False
    return not (isinstance(device, ast.Constant) and device.value == "cpu")


def _disabled(call: ast.Call) -> bool:
    """``autocast(..., enabled=False)``: a region where autocast is off."""
    enabled = keyword(call, "enabled")
    return isinstance(enabled, ast.Constant) and enabled.value is False


def _inside(node: ast.AST, block: ast.With | ast.AsyncWith) -> bool:
    first, last = block.body[0], block.body[-1]
    end = last.end_lineno or last.lineno
    return first.lineno <= getattr(node, "lineno", 0) <= end


@detector(A.AutocastDeviceString)
def autocast_device_string(a: Analysis) -> Iterator[Finding]:
    if "autocast" not in a.source:
        return
    for call in a.calls:  # a `with` block's, or one a helper returns
        q = a.qualname(call.func)
        if q not in ("torch.autocast", "torch.amp.autocast"):  # the others take no device
            continue
        given = keyword(call, "device_type") or (call.args[0] if call.args else None)
        if given is None:
            continue
        device = _device_of_string(a, given)
        if device is None:
            yield from _indexed_device_string(a, given)
            continue
        fix = f"{a.text(device)}.type"
        why = (
            "is a `torch.device`, not a device type: autocast raises ValueError for it"
            if device is given
            else 'names a device ("cuda:0" on a GPU), not a device type: torch releases of '
            "2024-2025 refuse it there"
        )
        yield A.AutocastDeviceString.finding(
            f"`{a.name(given)}` {why}; pass `{fix}`",
            a.loc(given),
            Fix(f"pass `{fix}`", (replace_node(a, given, fix),), Safety.SAFE),
        )


def _indexed_device_string(a: Analysis, given: ast.expr) -> Iterator[Finding]:
    """``device_type`` given a device string with its index: ``"cuda:0"``,
    ``f"cuda:{rank}"``, or a name last set to one (also as an arm of a choice)."""
    held: ast.expr | None = given
    if isinstance(given, ast.Name):
        held = assigned_value(a, given, given.lineno) or module_value(a, given)
    if held is None or not _indexed_cuda(held):
        return
    fix = f"torch.device({a.text(given)}).type"
    edits = (replace_node(a, given, fix),) if a.imports.get("torch") == "torch" else ()
    where = f" (set on line {held.lineno})" if held is not given else ""
    yield A.AutocastDeviceString.finding(
        f'`{a.name(given)}` is a device with its index ("cuda:0" on a GPU){where}, not a device '
        f"type: torch releases of 2024-2025 refuse it there; pass `{fix}`",
        a.loc(given),
        Fix(f"pass `{fix}`", edits, Safety.SAFE),
    )


def _indexed_cuda(node: ast.expr) -> bool:
    if isinstance(node, ast.IfExp):
        return _indexed_cuda(node.body) or _indexed_cuda(node.orelse)
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("cuda:")
    )


def _device_of_string(a: Analysis, given: ast.expr | None) -> ast.expr | None:
    """The device in ``str(device)`` or ``f"{device}"``, or ``given`` when it is a device."""
    if (
        isinstance(given, ast.Call)
        and isinstance(given.func, ast.Name)
        and given.func.id == "str"
        and given.args
        and "str" not in a.bound_names
    ):
        return given.args[0]
    if isinstance(given, ast.JoinedStr) and len(given.values) == 1:
        value = given.values[0]
        if isinstance(value, ast.FormattedValue):
            return value.value
    if given is not None and not isinstance(given, ast.Constant):
        info = a.info(given)
        if info is not None and info.kind == K.DEVICE and info.origin != OF_VALUE:
            return given
    if isinstance(given, ast.Name) and _annotated_device(a, given):
        return given
    return None


def _annotated_device(a: Analysis, name: ast.Name) -> bool:
    """Whether ``name`` is a parameter of its function annotated ``torch.device``."""
    func = a.function_of(name)
    if func is None or isinstance(func, ast.Lambda):
        return False
    params = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    return any(
        p.arg == name.id and p.annotation is not None and a.qualname(p.annotation) == "torch.device"
        for p in params
    )
