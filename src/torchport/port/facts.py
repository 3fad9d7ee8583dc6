"""What a first read of one file tells the port: which names hold modules, loaders, float64 data.

The port never executes user code, so everything here is read from the source: imports are
resolved through libcst's qualified names (``import torch as T``, ``from torch import nn``), and
the answers are deliberately conservative — a name is only called a model, a loader or float64
NumPy data when its assignment says so.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import QualifiedNameProvider

# NumPy calls whose result is float64 unless a dtype says otherwise.
FLOAT64_PRODUCERS = frozenset(
    f"numpy.{name}"
    for name in (
        "random.rand",
        "random.randn",
        "random.random",
        "random.normal",
        "random.uniform",
        "random.standard_normal",
        "zeros",
        "ones",
        "empty",
        "linspace",
        "sin",
        "cos",
        "exp",
    )
)
# Where NumPy data enters torch.
NUMPY_ENTRIES = frozenset({"torch.from_numpy", "torch.tensor", "torch.as_tensor"})
# Methods of numpy.random.Generator that produce float64.
RNG_FLOAT64_METHODS = frozenset({"standard_normal", "normal", "random", "uniform"})
NOT_MODULES = frozenset({"Parameter", "DistributedDataParallel", "ParameterList", "ParameterDict"})
MODEL_METHODS = frozenset({"parameters", "named_parameters"})


def qualified(visitor: cst.MetadataDependent, node: cst.CSTNode) -> str | None:
    """The qualified name ``node`` refers to (``torch.nn.Linear`` for ``nn.Linear``), if known."""
    names = visitor.get_metadata(QualifiedNameProvider, node, set())
    return min((n.name for n in names), default=None)


def target_key(node: cst.BaseExpression) -> str | None:
    """``x`` for a Name, ``self.x`` for an attribute of a Name; None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        return f"{node.value.value}.{node.attr.value}"
    return None


def is_module_ctor(qname: str | None, module_classes: set[str]) -> bool:
    """Whether calling ``qname`` builds an ``nn.Module`` (torch.nn classes or known subclasses)."""
    if not qname:
        return False
    parts = qname.split(".")
    last = parts[-1]
    if last in module_classes:
        return True
    in_nn = parts[:2] == ["torch", "nn"] and not {"functional", "init", "utils"} & set(parts)
    return in_nn and last[:1].isupper() and last not in NOT_MODULES


@dataclass
class Facts:
    """What the port needs to know about one file before rewriting it."""

    module_classes: set[str] = field(default_factory=set)
    model_names: set[str] = field(default_factory=set)
    loader_names: set[str] = field(default_factory=set)
    device_loader_names: set[str] = field(default_factory=set)
    float64_keys: set[str] = field(default_factory=set)
    # ids of float64 NumPy expressions passed straight into torch (``torch.from_numpy(np.ones(3))``)
    float64_entries: set[int] = field(default_factory=set)
    parameter_owners: set[str] = field(default_factory=set)
    helpers_of_modules: set[str] = field(default_factory=set)
    moved_names: set[str] = field(default_factory=set)  # ``model.to(...)`` as a statement
    device_name: str | None = None
    nn_alias: str | None = None  # the local name bound to torch.nn, if any
    has_main_guard: bool = False


class FactsVisitor(cst.CSTVisitor):
    """Collects :class:`Facts`; ``known_module_classes`` come from the other files being ported."""

    METADATA_DEPENDENCIES = (QualifiedNameProvider,)

    def __init__(self, known_module_classes: set[str]) -> None:
        super().__init__()
        self.facts = Facts(module_classes=set(known_module_classes))
        self._rng_names: set[str] = set()
        self._classes: list[bool] = []  # for each enclosing class: is it an nn.Module?
        self._function_depth = 0

    @property
    def _in_module_class(self) -> bool:
        return bool(self._classes) and self._classes[-1]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases = [qualified(self, b.value) for b in node.bases]
        known = self.facts.module_classes
        is_module = any(is_module_ctor(q, known) or q == "torch.nn.Module" for q in bases)
        if is_module:
            known.add(node.name.value)
        self._classes.append(is_module)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._function_depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._function_depth -= 1

    def visit_If(self, node: cst.If) -> None:
        test = node.test
        if (
            isinstance(test, cst.Comparison)
            and isinstance(test.left, cst.Name)
            and test.left.value == "__name__"
        ):
            self.facts.has_main_guard = True

    def visit_Name(self, node: cst.Name) -> None:
        if self.facts.nn_alias is None and qualified(self, node) == "torch.nn":
            self.facts.nn_alias = node.value

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value in ("to", "cuda")
        ):
            key = target_key(call.func.value)
            if key is not None:
                self.facts.moved_names.add(key)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        for target in node.targets:
            key = target_key(target.target)
            if key is None:
                continue
            if isinstance(value, cst.Call):
                self._assigned_call(key, value)
            elif self._is_float64(value):
                self.facts.float64_keys.add(key)

    def _assigned_call(self, key: str, call: cst.Call) -> None:
        qname = qualified(self, call.func)
        if qname == "numpy.random.default_rng":
            self._rng_names.add(key)
        elif self._is_float64(call):
            self.facts.float64_keys.add(key)
        elif qname and qname.split(".")[-1] == "DataLoader":
            self.facts.loader_names.add(key)
        elif qname == "torchport.DeviceLoader":
            self.facts.device_loader_names.add(key)
        elif not self._in_module_class and is_module_ctor(qname, self.facts.module_classes):
            self.facts.model_names.add(key)
        elif qname in ("torch.device", "torchport.default_device") and self._module_level(key):
            self.facts.device_name = self.facts.device_name or key

    def _module_level(self, key: str) -> bool:
        return "." not in key and not self._function_depth and not self._classes

    def _is_float64(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.BinaryOperation):
            return self._is_float64(node.left) or self._is_float64(node.right)
        if isinstance(node, (cst.Name, cst.Attribute)):
            return target_key(node) in self.facts.float64_keys
        if not isinstance(node, cst.Call):
            return False
        if qualified(self, node.func) in FLOAT64_PRODUCERS:
            return not any(a.keyword and a.keyword.value == "dtype" for a in node.args)
        func = node.func
        if isinstance(func, cst.Attribute):
            owner = target_key(func.value)
            if func.attr.value in RNG_FLOAT64_METHODS and owner in self._rng_names:
                return True
            if func.attr.value in ("reshape", "copy", "mean", "std", "clip"):
                return self._is_float64(func.value)
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if len(node.args) == 1 and qualified(self, func) in NUMPY_ENTRIES:
            data = node.args[0].value
            if not isinstance(data, (cst.Name, cst.Attribute)) and self._is_float64(data):
                self.facts.float64_entries.add(id(data))
        if isinstance(func, cst.Attribute) and func.attr.value in MODEL_METHODS:
            key = target_key(func.value)
            if key is not None:
                self.facts.parameter_owners.add(key)
        if self._in_module_class and isinstance(func, cst.Name):
            self.facts.helpers_of_modules.add(func.value)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def module_classes(trees: Iterable[ast.Module]) -> set[str]:
    """Names of ``nn.Module`` subclasses defined across several files (stdlib ``ast``: fast).

    A model class defined in one file of a package is constructed in another; the per-file
    pass resolves imports properly, this only needs the names.
    """
    classes = [n for tree in trees for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    known: set[str] = set()
    while True:
        found = {
            c.name for c in classes if any(_is_module_base(_dotted(b), known) for b in c.bases)
        }
        if found <= known:
            return known
        known |= found


def _is_module_base(dotted: str, known: set[str]) -> bool:
    last = dotted.rsplit(".", 1)[-1]
    in_nn = dotted.startswith(("nn.", "torch.nn.")) and last[:1].isupper()
    return last == "Module" or last in known or (in_nn and last not in NOT_MODULES)
