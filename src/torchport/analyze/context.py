"""One parsed file: imports resolved, parents known, and what each name holds (best effort).

Inference is deliberately small and conservative: a name gets a kind (tensor, module, loader,
device, ndarray...) only when an assignment, loop, annotation or same-file definition makes it
evident. Anything else is ``None`` and rules stay silent about it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING

from torchport.analyze import kinds as K
from torchport.analyze.fixer import char_column
from torchport.analyze.walk import children, walk

if TYPE_CHECKING:
    from torchport.analyze.scope import Scope

Func = ast.FunctionDef | ast.AsyncFunctionDef
_LINE_END = re.compile(r"\r\n|\r|\n")
Info = K.Info
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _module_base(name: str) -> bool:
    if name in K.MODULE_BASES:
        return True
    last = name.rsplit(".", 1)[-1]
    layer = name.startswith("torch.nn.") and name.count(".") == 2 and last[:1].isupper()
    return layer and last not in ("Parameter", "Buffer", "UninitializedParameter")


class FileContext:
    """Everything rules need about one file; built once, shared by every detector."""

    def __init__(self, source: str, path: str, tree: ast.Module | None = None) -> None:
        self.source, self.path = source, path
        self.tree = tree if tree is not None else ast.parse(source)
        # ast counts only \n, \r\n and \r as line ends (str.splitlines also splits on \f...);
        # most files have \n alone, which str.split finds several times faster than a regex
        self.lines = _LINE_END.split(source) if "\r" in source else source.split("\n")
        self.parents: dict[ast.AST, ast.AST] = {}
        self.imports: dict[str, str] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, Func] = {}
        self.nodes = walk(self.tree, self.parents)
        self.calls: list[ast.Call] = self.nodes.get(ast.Call, [])  # type: ignore[assignment]
        imports = self.of_type(ast.Import, ast.ImportFrom)
        for node in sorted(imports, key=lambda n: (n.lineno, n.col_offset)):  # type: ignore[attr-defined]
            self._add_import(node)  # type: ignore[arg-type]
        for stmt in self.tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes.setdefault(stmt.name, stmt)
        for node in self.nodes.get(ast.ClassDef, []):
            assert isinstance(node, ast.ClassDef)
            self.classes.setdefault(node.name, node)
        self._scopes: dict[ast.AST, Scope] = {}
        self._returns: dict[ast.AST, Info | None] = {}
        self._arguments: dict[tuple[ast.AST, str], Info | None] = {}
        self._attrs: dict[tuple[ast.ClassDef, str], Info | None] = {}
        self._class_attrs: dict[ast.ClassDef, dict[str, list[tuple[ast.stmt, ast.expr]]]] = {}

    # -- imports and names ---------------------------------------------------------------
    def _add_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imports[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    self.imports[root] = root
        elif node.module and not node.level:
            for alias in node.names:
                self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def qualname(self, expr: ast.expr) -> str | None:
        """``torch.nn.Linear`` for ``nn.Linear`` after ``from torch import nn``; else None."""
        if isinstance(expr, ast.Name):
            found = self.imports.get(expr.id)
            return None if found is None else K.canonical(found)
        if isinstance(expr, ast.Attribute):
            base = self.qualname(expr.value)
            return None if base is None else K.canonical(f"{base}.{expr.attr}")
        return None

    def alias_for(self, qualified: str) -> str | None:
        """The local spelling of a module/object, e.g. ``nn`` for torch.nn; None if absent."""
        best: str | None = None
        for local, target in self.imports.items():
            if target == qualified:
                return local
            if qualified.startswith(target + ".") and best is None:
                best = local + qualified[len(target) :]
        return best

    # -- structure -----------------------------------------------------------------------
    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def own_callee(self, call: ast.Call) -> Func | None:
        """The function ``f(...)`` or the method ``self.m(...)`` of this file that ``call``
        calls, found by name alone (no inference)."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.functions.get(func.id)
        if not is_self_attr(func):
            return None
        owner = self.function_of(call)
        cls = self.class_of(owner) if owner is not None else None
        return self.method(cls, func.attr) if cls is not None else None  # type: ignore[attr-defined]

    def enclosing(self, node: ast.AST, *types: type[ast.AST]) -> ast.AST | None:
        """The innermost node of one of ``types`` around ``node`` (its loop, its function)."""
        return next((up for up in self.ancestors(node) if isinstance(up, types)), None)

    def function_of(self, node: ast.AST) -> Func | None:
        for up in self.ancestors(node):
            if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef):
                return up
        return None

    def class_of(self, func: ast.AST) -> ast.ClassDef | None:
        parent = self.parents.get(func)
        return parent if isinstance(parent, ast.ClassDef) else None

    def base_names(self, cls: ast.ClassDef) -> set[str]:
        """Qualified (or local, for same-file classes) names of a class's bases, transitively."""
        out: set[str] = set()
        for base in cls.bases:
            q = self.qualname(base)
            if q:
                out.add(q)
            elif isinstance(base, ast.Name) and base.id in self.classes:
                parent = self.classes[base.id]
                if parent is not cls:
                    out |= self.base_names(parent) | {base.id}
        return out

    @cached_property
    def bound_names(self) -> set[str]:
        """Every name assigned (or taken as a parameter) somewhere in the file: only these can
        hold what inference follows (a model, a tensor), so other names are not looked up."""
        store = ast.Store
        stored = {n.id for n in self.of_type(ast.Name) if type(n.ctx) is store}  # type: ignore[attr-defined]
        return stored | {arg.arg for arg in self.of_type(ast.arg)}  # type: ignore[attr-defined]

    @cached_property
    def mentions_loaders(self) -> bool:
        """Whether anything here can make a loader (``DataLoader``, a ``*Loader`` class) for
        inference to find; asked for every loop, so searched once."""
        return "Loader" in self.source

    @cached_property
    def module_classes(self) -> set[str]:
        """Classes of the file that are modules: of ``nn.Module``, or of a torch layer
        (``class BiConv2d(nn.Conv2d)``), directly or through the file's own classes."""
        return {n for n, c in self.classes.items() if any(map(_module_base, self.base_names(c)))}

    @cached_property
    def dataset_classes(self) -> set[str]:
        return {n for n, c in self.classes.items() if self.base_names(c) & K.DATASET_BASES}

    @cached_property
    def plain_methods(self) -> dict[str, list[Func]]:
        """The methods of the file's classes that are not modules (trainers, meters,
        callbacks), by name: what ``obj.name(...)`` may call when found by name alone."""
        out: dict[str, list[Func]] = {}
        for name, cls in self.classes.items():
            if name in self.module_classes:
                continue
            for stmt in cls.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                    out.setdefault(stmt.name, []).append(stmt)
        return out

    def method(self, cls: ast.ClassDef, name: str) -> Func | None:
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                return stmt
        return None

    # -- positions and text --------------------------------------------------------------
    def col(self, line: int, byte_col: int) -> int:
        return char_column(self.lines[line - 1], byte_col) if 0 < line <= len(self.lines) else 0

    def start(self, node: ast.AST) -> tuple[int, int]:
        line: int = getattr(node, "lineno", 1)
        return line, self.col(line, getattr(node, "col_offset", 0))

    def end(self, node: ast.AST) -> tuple[int, int]:
        end = getattr(node, "end_lineno", None)
        line: int = end if isinstance(end, int) else getattr(node, "lineno", 1)
        return line, self.col(line, getattr(node, "end_col_offset", None) or 0)

    def text(self, node: ast.AST) -> str:
        """The source text of ``node`` ("" when it has no position)."""
        if getattr(node, "end_lineno", None) is None:
            return ""
        (line, col), (end_line, end_col) = self.start(node), self.end(node)
        if line == end_line:
            return self.lines[line - 1][col:end_col]
        inner = self.lines[line : end_line - 1]
        return "\n".join([self.lines[line - 1][col:], *inner, self.lines[end_line - 1][:end_col]])

    def of_type(self, *types: type[ast.AST]) -> list[ast.AST]:
        """Every node of these exact types, in ``ast.walk`` order."""
        if len(types) == 1:
            return self.nodes.get(types[0], [])
        return [n for t in types for n in self.nodes.get(t, [])]

    # -- inference -----------------------------------------------------------------------
    def scope(self, node: ast.AST) -> Scope:
        """The scope (function or module) that ``node`` is evaluated in."""
        from torchport.analyze.scope import Scope

        owner: ast.AST = self.function_of(node) or self.tree
        if owner not in self._scopes:
            self._scopes[owner] = Scope(self, owner)
        return self._scopes[owner]

    def info(self, expr: ast.expr) -> Info | None:
        """What ``expr`` evaluates to, judged at its own line; None when not evident."""
        return self.scope(expr).infer(expr, getattr(expr, "lineno", 0))

    def argument(self, func: Func, name: str) -> Info | None:
        """What parameter ``name`` of a same-file function is given: the kind every call of
        the file hands it (a tensor, a model), with its device, dtype and class where all calls
        agree; None when they differ, when one is not evident, or when nothing calls it. The
        origin is not carried: a finding about the value is made where it was made."""
        key = (func, name)
        if key in self._arguments:
            return self._arguments[key]
        self._arguments[key] = None  # guards recursion
        given = [self._argument_at(call, skip, func, name) for call, skip in self._callers(func)]
        known = [i for i in given if i is not None]
        if known and len(known) == len(given) and len({i.kind for i in known}) == 1:
            self._arguments[key] = Info(
                known[0].kind,
                device=_agreed(i.device for i in known),
                dtype=_agreed(i.dtype for i in known),
                cls=_agreed(i.cls for i in known),
                target=_agreed(i.target for i in known),
            )
        return self._arguments[key]

    def _callers(self, func: Func) -> list[tuple[ast.Call, int]]:
        """Calls of ``func`` in the file, each with how many parameters the call does not pass
        (``self``): a function by its name; a method as ``self.name(...)`` in its class, or as
        ``obj.name(...)`` anywhere when no other class of the file has a method of that name;
        ``__init__`` as ``ClassName(...)``."""
        cls = self.class_of(func)
        if cls is None:
            named = self.calls_named.get(func.name, [])
            return [
                (c, 0)
                for c in named
                if isinstance(c.func, ast.Name) and self.functions.get(c.func.id) is func
            ]
        if func.name == "__init__":
            named = self.calls_named.get(cls.name, [])
            return [
                (c, 1)
                for c in named
                if isinstance(c.func, ast.Name) and self.classes.get(c.func.id) is cls
            ]
        unique = not func.name.startswith("__") and self._method_owners.get(func.name) == 1
        out: list[tuple[ast.Call, int]] = []
        for call in self.calls_named.get(func.name, []):
            callee = call.func
            if not isinstance(callee, ast.Attribute):
                continue
            on_self = isinstance(callee.value, ast.Name) and callee.value.id == "self"
            if (on_self and self.class_of(self.function_of(call) or self.tree) is cls) or (
                not on_self and unique
            ):
                out.append((call, 1))
        return out

    @cached_property
    def _method_owners(self) -> dict[str, int]:
        """How many of the file's classes define each method name."""
        out: dict[str, int] = {}
        for cls in self.classes.values():
            for stmt in cls.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                    out[stmt.name] = out.get(stmt.name, 0) + 1
        return out

    @cached_property
    def calls_named(self) -> dict[str, list[ast.Call]]:
        """The file's calls by the last name of what they call (``f(...)``, ``obj.f(...)``)."""
        out: dict[str, list[ast.Call]] = {}
        for call in self.calls:
            func = call.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name is not None:
                out.setdefault(name, []).append(call)
        return out

    def given(self, func: Func, name: str) -> list[ast.expr | None]:
        """The expression each call of the file gives parameter ``name`` of ``func`` (None
        where a call leaves it out or passes ``*args``); empty when nothing calls it."""
        return [value for _, value in self.given_by_call(func, name)]

    def given_by_call(self, func: Func, name: str) -> list[tuple[ast.Call, ast.expr | None]]:
        """Each call of ``func`` in the file, with what it gives parameter ``name``."""
        return [
            (call, self._given_at(call, skip, func, name)) for call, skip in self._callers(func)
        ]

    def calls_of(self, func: Func) -> list[ast.Call]:
        """The calls of ``func`` in the file (see ``_callers``)."""
        return [call for call, _ in self._callers(func)]

    def _argument_at(self, call: ast.Call, skip: int, func: Func, name: str) -> Info | None:
        value = self._given_at(call, skip, func, name)
        return None if value is None else self.info(value)

    def _given_at(self, call: ast.Call, skip: int, func: Func, name: str) -> ast.expr | None:
        params = [*func.args.posonlyargs, *func.args.args]
        index = next((i for i, p in enumerate(params) if p.arg == name), None)
        value: ast.expr | None = None
        if index is not None and skip <= index < len(call.args) + skip:
            value = call.args[index - skip]
        else:
            value = next((k.value for k in call.keywords if k.arg == name), None)
        if isinstance(value, ast.Starred) or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        return value

    def returns(self, func: Func) -> Info | None:
        """The common kind of every ``return`` in a same-file function (None if they differ)."""
        if func in self._returns:
            return self._returns[func]
        self._returns[func] = None  # guards recursion
        scope = self.scope(func.body[0]) if func.body else None
        found: list[Info | None] = [
            scope.infer(n.value, n.lineno)
            for n in walk_local(func)
            if scope is not None and isinstance(n, ast.Return) and n.value is not None
        ]
        result = found[0] if found and all(f == found[0] for f in found) else None
        if result is None and found and all(f is not None for f in found):
            kinds = {f.kind for f in found if f is not None}
            result = Info(kinds.pop()) if len(kinds) == 1 else None
        self._returns[func] = result
        return result

    def self_attr(self, cls: ast.ClassDef, attr: str) -> Info | None:
        """What ``self.attr`` holds, from its assignments in the class's methods."""
        key = (cls, attr)
        if key not in self._attrs:
            self._attrs[key] = None  # guards recursion (self.x = self.x + 1)
            self._attrs[key] = self._self_attr(cls, attr)
        return self._attrs[key]

    def _self_attr(self, cls: ast.ClassDef, attr: str) -> Info | None:
        found = [
            self.scope(node).infer(value, node.lineno)
            for node, value in self.attr_assignments(cls).get(attr, [])
        ]
        if found and all(f is not None and f.kind == found[0].kind for f in found):  # type: ignore[union-attr]
            return found[-1]
        return None

    def attr_assignments(self, cls: ast.ClassDef) -> dict[str, list[tuple[ast.stmt, ast.expr]]]:
        """``self.<attr> = value`` statements in the class's methods, by attribute (cached)."""
        if cls in self._class_attrs:
            return self._class_attrs[cls]
        table: dict[str, list[tuple[ast.stmt, ast.expr]]] = {}
        for stmt in cls.body:
            if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in binding_sites(stmt):
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if is_self_attr(target):
                            assert isinstance(target, ast.Attribute)
                            table.setdefault(target.attr, []).append((node, node.value))
        self._class_attrs[cls] = table
        return table


def is_self_attr(target: ast.expr, attr: str | None = None) -> bool:
    """``self.<attr>`` (any attribute of ``self`` when ``attr`` is None)."""
    return (
        isinstance(target, ast.Attribute)
        and (attr is None or target.attr == attr)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    )


def walk_local(root: ast.AST) -> Iterator[ast.AST]:
    """Nodes under ``root`` without entering nested functions, classes or lambdas."""
    stack = children(root)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _NESTED):
            stack.extend(children(node))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def binding_sites(owner: ast.AST) -> Iterator[ast.AST]:
    """What ``walk_local(owner)`` yields that can bind a name, in the same order: statements
    and with-items. Expressions are not walked (they bind nothing followed here), which makes
    building a scope several times cheaper.
    """
    stack = _blocks(owner)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(_blocks(node))


def _blocks(node: ast.AST) -> list[ast.AST]:
    cls = type(node)
    names = _BLOCK_FIELDS.get(cls)
    if names is None:
        names = _BLOCK_FIELDS[cls] = tuple(f for f in cls._fields if f in _BLOCK_NAMES)
    out: list[ast.AST] = []
    for name in names:
        value = getattr(node, name, None)
        if type(value) is list:
            out.extend(value)
    return out


# the fields that hold statements, with-items, handlers or match cases (an expression's
# `body`, as in a lambda, is no list)
_BLOCK_NAMES = frozenset({"body", "orelse", "finalbody", "handlers", "items", "cases"})
_BLOCK_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _agreed(values: Iterable[str | None]) -> str | None:
    """The one value all give, or None."""
    found = set(values)
    return found.pop() if len(found) == 1 else None
