"""The value a settings object gives a loader option when nothing in the file changes it.

Real programs pass ``num_workers=cfg.num_workers`` and ``pin_memory=args.pin_memory``, and the
mistake sits in the defaults: a dataclass field (``num_workers: int = 0``), a class attribute, an
argparse option (``add_argument("--num-workers", default=0)``), or a namespace
(``SimpleNamespace(num_workers=0)``). A default counts only when it
is the file's one definition of that name and nothing in the file sets it otherwise: no
assignment to ``<obj>.<name>``, no keyword of that name given to a class of the file.
"""

from __future__ import annotations

import ast

from torchport.analyze.checks.base import Analysis
from torchport.analyze.checks.values import assigned_value
from torchport.analyze.infer import keyword


def setting_default(a: Analysis, expr: ast.expr) -> tuple[ast.Constant, ast.stmt | ast.expr] | None:
    """The constant default behind ``cfg.<name>`` and where it is written, or None (through
    a local alias: ``workers = self.cfg.num_workers``)."""
    if isinstance(expr, ast.Name):
        alias = assigned_value(a, expr, expr.lineno)
        expr = alias if alias is not None else expr
    if not isinstance(expr, ast.Attribute) or _set_elsewhere(a, expr.attr):
        return None
    found = [*_class_fields(a, expr.attr), *_options(a, expr.attr), *_namespaces(a, expr.attr)]
    if len(found) != 1:
        return None
    return found[0]


def _class_fields(a: Analysis, name: str) -> list[tuple[ast.Constant, ast.stmt | ast.expr]]:
    out: list[tuple[ast.Constant, ast.stmt | ast.expr]] = []
    for cls in a.classes.values():
        for stmt in cls.body:
            target: ast.expr | None = None
            if isinstance(stmt, ast.AnnAssign):
                target = stmt.target
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
            value = getattr(stmt, "value", None)
            if isinstance(target, ast.Name) and target.id == name:
                if not isinstance(value, ast.Constant):
                    return []  # a computed default: not followed
                out.append((value, stmt))
    return out


_NAMESPACES = ("types.SimpleNamespace", "argparse.Namespace")


def _namespaces(a: Analysis, name: str) -> list[tuple[ast.Constant, ast.stmt | ast.expr]]:
    """``SimpleNamespace(num_workers=0, ...)``: a config written as a namespace."""
    out: list[tuple[ast.Constant, ast.stmt | ast.expr]] = []
    for call in a.call_named(*_NAMESPACES):
        for kw in call.keywords:
            if kw.arg != name:
                continue
            if not isinstance(kw.value, ast.Constant):
                return []  # a computed value: not followed
            out.append((kw.value, kw.value))
    return out


def _options(a: Analysis, name: str) -> list[tuple[ast.Constant, ast.stmt | ast.expr]]:
    out: list[tuple[ast.Constant, ast.stmt | ast.expr]] = []
    for call, _ in a.method_calls("add_argument"):
        flags = [
            arg.value
            for arg in call.args
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
        ]
        dest = keyword(call, "dest")
        names = {f.lstrip("-").replace("-", "_") for f in flags if f.startswith("--")}
        if isinstance(dest, ast.Constant):
            names = {str(dest.value)}
        if name not in names:
            continue
        default = keyword(call, "default")
        if not isinstance(default, ast.Constant):
            return []  # no default, or a computed one
        out.append((default, call))
    return out


def _set_elsewhere(a: Analysis, name: str) -> bool:
    """``<obj>.<name> = ...`` anywhere, or ``SomeClassOfTheFile(<name>=...)``."""
    for node in a.of_type(ast.Assign, ast.AugAssign, ast.AnnAssign):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Attribute) and t.attr == name for t in targets):
            return True
    for call in a.calls:
        func = call.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        configures = called in a.classes or called in ("replace", "set_defaults")
        if configures and any(k.arg == name or k.arg is None for k in call.keywords):
            return True
    return False
