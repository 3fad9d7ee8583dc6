"""The program being analysed: its files, functions and classes, and how names cross files.

A :class:`Program` is one file or a package of files analysed together, so that a model class
defined in ``model.py`` and constructed in ``train.py``, or a metric helper imported from
``utils.py``, is followed across the import.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePath

from torchport.analyze import kinds as K
from torchport.analyze.context import FileContext
from torchport.analyze.flow.values import Kind, OKind, Origin, Place, Val

Func = ast.FunctionDef | ast.AsyncFunctionDef


class Role(enum.Enum):
    """Where a function runs, which decides how a tensor made in it gets to the device."""

    SCRIPT = "script"  # the program's own code: the selected device is at hand
    MODEL = "model"  # forward and what it calls: the inputs' device is the one to use
    INIT = "init"  # a module's __init__ and what it calls: state becomes buffers
    DATA = "data"  # Dataset methods, collate functions: always on the host


@dataclass(eq=False)
class FuncInfo:
    """A function or method of the program, and what it was called with and returns."""

    node: Func | ast.Lambda
    unit: Unit
    name: str
    cls: ClassInfo | None = None  # the class a method belongs to
    parent: FuncInfo | None = None  # the enclosing function of a nested one
    closure: dict[str, Val] | None = None  # the enclosing scope's names
    param_vals: dict[str, Val] = field(default_factory=dict)
    ret: Val | None = None
    analyses: int = 0
    callers: list[tuple[FuncInfo | None, ast.Call]] = field(default_factory=list)
    roles: set[Role] = field(default_factory=set)
    is_generator: bool = False
    tensor_uses: set[str] | None = None  # names used like tensors in its body (guesses)

    @property
    def params(self) -> list[ast.arg]:
        args = self.node.args
        return [*args.posonlyargs, *args.args, *args.kwonlyargs]

    @property
    def is_method(self) -> bool:
        return self.cls is not None and not _is_static(self.node)

    def __repr__(self) -> str:
        owner = f"{self.cls.name}." if self.cls else ""
        return f"<func {owner}{self.name}>"


def _module_base(qual: str) -> bool:
    if qual in K.MODULE_BASES:
        return True
    parts = qual.split(".")
    if qual.startswith("torch.nn.") and not {"functional", "init", "utils", "parameter"} & set(
        parts
    ):
        return parts[-1][:1].isupper() and parts[-1] not in ("Parameter", "Buffer")
    return qual.startswith("torchvision.models.") and parts[-1][:1].isupper()


def _is_static(node: Func | ast.Lambda) -> bool:
    if isinstance(node, ast.Lambda):
        return True
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


@dataclass(eq=False)
class ClassInfo:
    """A class of the program: its bases, methods and the attributes its code sets."""

    node: ast.ClassDef
    unit: Unit
    name: str
    bases: list[ClassInfo] = field(default_factory=list)
    external_bases: set[str] = field(default_factory=set)
    methods: dict[str, FuncInfo] = field(default_factory=dict)
    attrs: dict[str, Val] = field(default_factory=dict)
    state: Origin | None = None  # parameters, buffers and submodules of its instances
    instances: list[Origin] = field(default_factory=list)
    subclasses: list[ClassInfo] = field(default_factory=list)

    @property
    def is_module(self) -> bool:
        """An ``nn.Module`` subclass: of Module itself, of a torch layer (``nn.Linear``) or of a
        torchvision model, directly or through the program's own classes."""
        external = any(_module_base(q) for q in self.external_bases)
        return external or any(b.is_module for b in self.bases)

    @property
    def is_dataset(self) -> bool:
        external = any(
            q in K.DATASET_BASES or q.startswith("torchvision.datasets.")
            for q in self.external_bases
        )
        return external or any(b.is_dataset for b in self.bases)

    def method(self, name: str) -> FuncInfo | None:
        """The method ``name`` as Python finds it (this class, then its program bases)."""
        if name in self.methods:
            return self.methods[name]
        for base in self.bases:
            found = base.method(name)
            if found is not None:
                return found
        return None

    def attr(self, name: str) -> Val | None:
        if name in self.attrs:
            return self.attrs[name]
        for base in self.bases:
            found = base.attr(name)
            if found is not None:
                return found
        return None

    def lineage(self) -> list[ClassInfo]:
        """This class and its program bases, nearest first."""
        out = [self]
        for base in self.bases:
            out.extend(c for c in base.lineage() if c not in out)
        return out

    def __repr__(self) -> str:
        return f"<class {self.name}>"


@dataclass(eq=False)
class Unit:
    """One file of the program."""

    ctx: FileContext
    module: str  # dotted name, e.g. "pkg_app.model"
    is_package_init: bool = False
    functions: dict[str, FuncInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    globals: dict[str, Val] = field(default_factory=dict)
    analysed: bool = False

    @property
    def path(self) -> str:
        return self.ctx.path

    @property
    def package(self) -> str:
        if self.is_package_init:
            return self.module
        return self.module.rpartition(".")[0]

    @cached_property
    def relative_imports(self) -> dict[str, str]:
        """``from .model import Net`` in ``pkg.train``: {"Net": "pkg.model.Net"}."""
        table: dict[str, str] = {}
        for node in self.ctx.of_type(ast.ImportFrom):
            assert isinstance(node, ast.ImportFrom)
            if not node.level:
                continue
            package = self.package.split(".") if self.package else []
            kept = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            base = ".".join([*kept, *([node.module] if node.module else [])])
            for alias in node.names:
                table[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
        return table

    def __repr__(self) -> str:
        return f"<unit {self.module}>"


def module_name(path: str, roots: Iterable[str] = ()) -> tuple[str, bool]:
    """The dotted module name of ``path`` and whether it is a package's ``__init__``.

    The name is taken relative to the nearest folder above that is not a package (has no
    ``__init__.py`` among the analysed files), as Python would import it from there.
    """
    pure = PurePath(path)
    known = {str(PurePath(r)) for r in roots}
    parts = [pure.stem]
    folder = pure.parent
    while str(folder / "__init__.py") in known:
        parts.insert(0, folder.name)
        folder = folder.parent
    is_init = parts[-1] == "__init__"
    if is_init:
        parts.pop()
    return ".".join(parts) or pure.stem, is_init


class Program:
    """Every unit analysed together, and the lookups that cross them."""

    def __init__(self, contexts: list[FileContext], all_paths: Iterable[str] = ()) -> None:
        # module names are read against every file given (a package split into programs
        # still imports by its full dotted names)
        paths = [c.path for c in contexts] + list(all_paths)
        self.units: list[Unit] = []
        self.by_module: dict[str, Unit] = {}
        self.by_path: dict[str, Unit] = {}
        self._near: dict[tuple[str, int], Unit | None] = {}
        # the last part of every dotted name a file of the program can be imported by
        self._last_parts: set[str] = set()
        for ctx in contexts:
            name, is_init = module_name(ctx.path, paths)
            unit = Unit(ctx, name, is_init)
            self.units.append(unit)
            self.by_module.setdefault(name, unit)
            self.by_path[str(PurePath(ctx.path))] = unit
            pure = PurePath(ctx.path)
            self._last_parts.add(pure.parent.name if pure.stem == "__init__" else pure.stem)
        for unit in self.units:
            self._collect(unit)
        for unit in self.units:
            for cls in unit.classes.values():
                self._resolve_bases(cls)

    def _collect(self, unit: Unit) -> None:
        for stmt in unit.ctx.tree.body:
            self._collect_stmt(unit, stmt)

    def _collect_stmt(self, unit: Unit, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            unit.functions[stmt.name] = FuncInfo(stmt, unit, stmt.name)
        elif isinstance(stmt, ast.ClassDef):
            cls = ClassInfo(stmt, unit, stmt.name)
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    cls.methods[item.name] = FuncInfo(item, unit, item.name, cls=cls)
            unit.classes[stmt.name] = cls
        elif isinstance(stmt, ast.If):
            # definitions under `if TYPE_CHECKING:` / `if sys.version...` still define names
            for inner in [*stmt.body, *stmt.orelse]:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    self._collect_stmt(unit, inner)

    def _resolve_bases(self, cls: ClassInfo) -> None:
        for base in cls.node.bases:
            found = self.symbol(cls.unit, base)
            if isinstance(found, ClassInfo) and found is not cls:
                cls.bases.append(found)
                found.subclasses.append(cls)
                continue
            qual = cls.unit.ctx.qualname(base)
            if qual:
                cls.external_bases.add(qual)
        if cls.is_module or cls.is_dataset:
            kind = OKind.STATE
            label = f"the parameters and buffers of `{cls.name}`"
            cls.state = Origin(kind, cls.node, cls.unit, None, Place.HOST, label, cls=cls)

    # -- names ---------------------------------------------------------------------------------

    def symbol(self, unit: Unit, expr: ast.expr) -> FuncInfo | ClassInfo | None:
        """The program function or class that ``expr`` (a name or dotted name) refers to."""
        if isinstance(expr, ast.Name):
            if expr.id in unit.classes:
                return unit.classes[expr.id]
            if expr.id in unit.functions:
                return unit.functions[expr.id]
        dotted = self.imported(unit, expr)
        return self.lookup(dotted, unit) if dotted else None

    def imported(self, unit: Unit, expr: ast.expr) -> str | None:
        """The full dotted name ``expr`` refers to through the unit's imports (relative too)."""
        if isinstance(expr, ast.Name):
            return self.import_target(unit, expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.imported(unit, expr.value)
            return None if base is None else f"{base}.{expr.attr}"
        return None

    def import_target(self, unit: Unit, name: str) -> str | None:
        found = unit.ctx.imports.get(name)
        if found is not None:
            return found
        return unit.relative_imports.get(name)

    def lookup(self, dotted: str, near: Unit | None = None) -> FuncInfo | ClassInfo | None:
        """A function or class of the program by its dotted name (``pkg.model.Net``)."""
        module, _, name = dotted.rpartition(".")
        unit = self.module_unit(module, near)
        if unit is None:
            return None
        if name in unit.classes:
            return unit.classes[name]
        if name in unit.functions:
            return unit.functions[name]
        # re-exported by `from .model import Net` in a package's __init__
        target = self.import_target(unit, name)
        if target is not None and target != dotted:
            return self.lookup(target, unit)
        return None

    def module_unit(self, dotted: str, near: Unit | None = None) -> Unit | None:
        """The file ``import dotted`` reads: a package module, or (as Python finds it from the
        importing script's folder) a file under a folder with no ``__init__.py``."""
        found = self.by_module.get(dotted)
        if found is not None or near is None or not dotted:
            return found
        key = (dotted, id(near))
        if key not in self._near:
            self._near[key] = self._by_folder(dotted, near)
        return self._near[key]

    def _by_folder(self, dotted: str, near: Unit) -> Unit | None:
        if dotted.rpartition(".")[2] not in self._last_parts:
            return None  # most imports (torch, numpy...) name no file of the program
        relative = PurePath(*dotted.split("."))
        folder = PurePath(near.path).parent
        for base in [folder, *folder.parents][:4]:
            for candidate in (base / f"{relative}.py", base / relative / "__init__.py"):
                unit = self.by_path.get(str(candidate))
                if unit is not None:
                    return unit
        return None


def components(contexts: list[FileContext]) -> list[list[FileContext]]:
    """The files split into programs: files that import each other, directly or not, together."""
    program = Program(contexts)
    group = {id(u): i for i, u in enumerate(program.units)}

    def find(i: int) -> int:
        while group_of[i] != i:
            group_of[i] = group_of[group_of[i]]
            i = group_of[i]
        return i

    group_of = list(range(len(program.units)))
    for unit in program.units:
        for target in [*unit.ctx.imports.values(), *unit.relative_imports.values()]:
            for dotted in (target, target.rpartition(".")[0]):
                other = program.module_unit(dotted, unit)
                if other is not None:
                    group_of[find(group[id(unit)])] = find(group[id(other)])
    out: dict[int, list[FileContext]] = {}
    for i, unit in enumerate(program.units):
        out.setdefault(find(i), []).append(unit.ctx)
    return list(out.values())


def kind_of_class(cls: ClassInfo) -> Kind:
    if cls.is_module:
        return Kind.MODULE
    if cls.is_dataset:
        return Kind.DATASET
    return Kind.OBJECT
