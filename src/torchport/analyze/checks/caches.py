"""TP121: tensors a module caches in plain attributes, rebuilt when anything but the device
changes (a shape, a batch size, "not built yet")."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.context import is_self_attr
from torchport.analyze.infer import keyword
from torchport.findings import Finding, Fix
from torchport.rules import device_ops as R


@detector(R.DeviceCacheKeyedWithoutDevice)
def device_cache_keyed_without_device(a: Analysis) -> Iterator[Finding]:
    if not a.uses_accelerator:
        return
    for name in sorted(a.module_classes):
        cls = a.classes[name]
        buffers = _buffers(cls)
        for method in cls.body:
            if not isinstance(method, ast.FunctionDef) or method.name == "__init__":
                continue
            for guard, stores in _guarded_caches(a, cls, method, buffers):
                cached = ", ".join(sorted({a.text(s) for s in stores}))
                yield R.DeviceCacheKeyedWithoutDevice.finding(
                    f"`{cached}` is a cache in a plain attribute that `{a.text(guard)}` keeps "
                    "whatever the device: built on the device of the first call, it stays "
                    "there when the module is moved; check the device too, or register a buffer",
                    a.loc(guard),
                    Fix("rebuild the cache when the device differs (or make it a buffer)"),
                    related=tuple(a.loc(s) for s in stores),
                )


def _guarded_caches(
    a: Analysis, cls: ast.ClassDef, method: ast.FunctionDef, buffers: set[str]
) -> Iterator[tuple[ast.expr, list[ast.expr]]]:
    """``if <a test on self's attributes>: self.x = <tensor>``, and ``if self.x is not None:
    return`` before ``self.x = <tensor>``; tests that mention a device are fine."""
    for node in ast.walk(method):
        if not isinstance(node, ast.If) or "device" in a.text(node.test):
            continue
        tested = {
            n.attr for n in ast.walk(node.test) if isinstance(n, ast.Attribute) and is_self_attr(n)
        }
        if not tested:
            continue
        if isinstance(node.body[-1], ast.Return) and len(node.body) == 1:
            later = [s for s in method.body if s.lineno > node.lineno]
            stores = [t for s in later for t in _tensor_stores(a, cls, s) if _attr(t) in tested]
        else:
            stores = [t for s in node.body for t in _tensor_stores(a, cls, s)]
        stores = [t for t in stores if _attr(t) not in buffers]
        if stores:
            yield node.test, stores


def _tensor_stores(a: Analysis, cls: ast.ClassDef, stmt: ast.stmt) -> list[ast.expr]:
    """The ``self.x`` / ``self.x[i]`` targets of ``stmt`` given tensors (or a tuple of them)."""
    if not isinstance(stmt, ast.Assign) or not _makes_tensors(a, cls, stmt.value):
        return []
    device = keyword(stmt.value, "device") if isinstance(stmt.value, ast.Call) else None
    if device is not None and is_self_attr(device):
        return []  # made on a device the module keeps for itself (FSDP's compute_device)
    out: list[ast.expr] = []
    for target in stmt.targets:
        for t in target.elts if isinstance(target, ast.Tuple) else [target]:
            if _attr(t) is not None:
                out.append(t)
    return out


def _attr(target: ast.expr) -> str | None:
    """``x`` for ``self.x`` or ``self.x[i]``."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target.attr if is_self_attr(target) else None  # type: ignore[attr-defined]


def _makes_tensors(a: Analysis, cls: ast.ClassDef, value: ast.expr) -> bool:
    """A tensor (as inference knows it), a list of them, or what a method of the class returns
    when that method calls torch."""
    info = a.info(value)
    if info is not None and info.kind == K.TENSOR:
        return True
    if isinstance(value, ast.Name):  # `mask, rel = self._build(...)` above, then `self.m = mask`
        return any(_makes_tensors(a, cls, made) for made in _assigned_to(a, value))
    if isinstance(value, ast.List) and value.elts:
        return _makes_tensors(a, cls, value.elts[0])
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    if isinstance(value.func.value, ast.Call) and not is_self_attr(value.func):
        return _makes_tensors(a, cls, value.func.value)  # self._make(...).to(x.device)
    if is_self_attr(value.func):
        method = a.method(cls, value.func.attr)
        return method is not None and any(
            isinstance(n, ast.Call) and (a.qualname(n.func) or "").startswith("torch.")
            for n in ast.walk(method)
        )
    return False


def _assigned_to(a: Analysis, name: ast.Name) -> list[ast.expr]:
    """The values assigned to ``name`` (alone or in a tuple) in the method around it, above."""
    method = a.function_of(name)
    if method is None:
        return []
    return [
        stmt.value
        for stmt in ast.walk(method)
        if isinstance(stmt, ast.Assign)
        and stmt.lineno < name.lineno
        and any(
            isinstance(n, ast.Name) and n.id == name.id
            for t in stmt.targets
            for n in (t.elts if isinstance(t, ast.Tuple) else [t])
        )
    ]


def _buffers(cls: ast.ClassDef) -> set[str]:
    return {
        n.args[0].value
        for n in ast.walk(cls)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "register_buffer"
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and isinstance(n.args[0].value, str)
    }
