"""Per-function knowledge the rewrite needs while it walks a file: which names must reach the
device, which parameter carries the input's device, which names a loop already moves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from torchport.port import snippets
from torchport.port.facts import Facts
from torchport.port.snippets import Statement

# Attributes and methods that only make sense on a tensor: a parameter used with them is one.
TENSOR_USES = frozenset(
    {"shape", "size", "device", "dtype", "dim", "ndim", "view", "reshape", "unsqueeze",
     "transpose", "masked_fill", "float", "sum", "mean", "new_zeros", "new_ones", "matmul"}
)  # fmt: skip
MODEL_LIKE = frozenset({"model", "net", "criterion", "loss_fn", "loss_func"})


@dataclass
class Scope:
    """A function (or the module) being rewritten."""

    name: str
    in_module_class: bool = False
    tensor_param: str | None = None
    factory_scope: bool = False  # tensors made here must follow the input's device
    bound: set[str] = field(default_factory=set)  # names passed to a model or loss module
    # Bound names that cannot move once before their first use: moved where the model gets them.
    move_at_use: set[str] = field(default_factory=set)
    move_before: dict[int, list[str]] = field(default_factory=dict)  # statement index -> names
    callables: set[str] = field(default_factory=set)
    tensor_locals: set[str] = field(default_factory=set)
    super_init_seen: bool = False

    @property
    def is_module_init(self) -> bool:
        return self.in_module_class and self.name == "__init__"


class _Uses(cst.CSTVisitor):
    """Names passed to model calls, and names used like tensors, without entering nested defs."""

    def __init__(self, callables: set[str]) -> None:
        super().__init__()
        self.callables = callables
        self.bound: set[str] = set()
        self.tensorish: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in self.callables:
            self.bound |= {_names_in(a.value) for a in node.args} - {""}

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.attr.value in TENSOR_USES:
            self.tensorish.add(node.value.value)


def _names_in(expr: cst.BaseExpression) -> str:
    """The name passed as an argument (``x`` for ``x``; calls nested in calls are visited)."""
    if isinstance(expr, cst.Name):
        return expr.value
    return ""


class _Assigned(cst.CSTVisitor):
    """Every name a statement binds (assignments, loop targets, ``with ... as``), nested too."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.loop_targets: set[str] = set()
        self.moved: set[str] = set()  # rebound from a device move: ``x = x.to(device)``
        # (targets, names read, whether a model is called) of each assignment
        self.sources: list[tuple[set[str], set[str], str]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        targets = set().union(*(_bound_names(t.target) for t in node.targets))
        if mentions_move(node.value):
            self.moved |= targets
        reads = {n.value for n in _names_read(node.value)}
        self.sources.append((targets, reads, cst.Module(body=[]).code_for_node(node.value)))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.names |= _bound_names(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.names |= _bound_names(node.target)

    def visit_For(self, node: cst.For) -> None:
        targets = _bound_names(node.target)
        self.names |= targets
        self.loop_targets |= targets

    def visit_AsName(self, node: cst.AsName) -> None:
        self.names |= _bound_names(node.name)


class _Reads(cst.CSTVisitor):
    """Names an expression reads (not attribute names such as ``x`` in ``data.x``, nor keywords)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _names_read(expr: cst.BaseExpression) -> list[cst.Name]:
    visitor = _Reads()
    expr.visit(visitor)
    return visitor.names


def _on_device(assigned: list[_Assigned], callables: set[str], loop_targets: set[str]) -> set[str]:
    """Names computed from a model's output or from a moved batch: already on the device."""
    sources = [source for a in assigned for source in a.sources]
    derived: set[str] = set()
    changed = True
    while changed:
        changed = False
        for targets, reads, code in sources:
            calls_model = any(f"{c}(" in code for c in callables)
            if (calls_model or reads & (loop_targets | derived)) and not targets <= derived:
                derived |= targets
                changed = True
    return derived


def _bound_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_bound_names(e.value) for e in target.elements))
    if isinstance(target, cst.StarredElement):
        return _bound_names(target.value)
    return set()


def mentions_move(expr: cst.BaseExpression) -> bool:
    code = cst.Module(body=[]).code_for_node(expr)
    return ".to(" in code or "to_device(" in code or ".cuda(" in code


def model_callables(facts: Facts) -> set[str]:
    callables = facts.model_names | MODEL_LIKE | facts.parameter_owners
    return {c for c in callables if "." not in c and c != "self"}


def _uses(body: cst.CSTNode, callables: set[str]) -> _Uses:
    visitor = _Uses(callables)
    body.visit(visitor)
    return visitor


def _assigned(node: cst.CSTNode) -> _Assigned:
    visitor = _Assigned()
    node.visit(visitor)
    return visitor


def plan_moves(
    statements: list[Statement], params: set[str], callables: set[str]
) -> tuple[dict[int, list[str]], set[str], set[str]]:
    """Where data that reaches the model moves to the device.

    A name passed to a model (or loss module) moves once, just before the first statement that
    passes it, when it is bound by then and never rebound after: everything computed from it on
    the host before stays on the host. Otherwise it moves where the model gets it. Returns the
    moves by statement index, the names moved at use, and the names left alone: loop targets
    (moved by the loop) and what is computed from them or from a model's output.
    """
    assigned = [_assigned(s) for s in statements]
    loop_targets: set[str] = set().union(*(a.loop_targets for a in assigned))
    loop_targets |= _on_device(assigned, callables, loop_targets)
    bound_so_far = set(params)
    before: dict[int, list[str]] = {}
    at_use: set[str] = set()
    done: set[str] = set()
    for i, statement in enumerate(statements):
        used = sorted(_uses(statement, callables).bound - done - loop_targets)
        done |= assigned[i].moved
        rebound_later = set().union(*(a.names for a in assigned[i:]))
        for name in used:
            done.add(name)
            if name in bound_so_far and name not in rebound_later:
                before.setdefault(i, []).append(name)
            else:
                at_use.add(name)
        bound_so_far |= assigned[i].names
    return before, at_use, loop_targets


def function_scope(node: cst.FunctionDef, facts: Facts, in_module_class: bool) -> Scope:
    params = [p.name.value for p in node.params.params]
    if in_module_class and params and params[0] in ("self", "cls"):
        params = params[1:]
    callables = model_callables(facts)
    uses = _uses(node.body, callables)
    name = node.name.value
    if name == "forward" and params:
        tensor_param: str | None = params[0]
    else:
        tensor_param = next((p for p in params if p in uses.tensorish), None)
    factory_scope = (in_module_class and name != "__init__") or (
        not in_module_class and name in facts.helpers_of_modules
    )
    scope = Scope(
        name=name,
        in_module_class=in_module_class,
        tensor_param=tensor_param,
        factory_scope=factory_scope,
        callables=callables,
    )
    if not in_module_class:
        scope.move_before, scope.move_at_use, _ = plan_moves(
            snippets.block(node.body), set(params), callables
        )
        scope.bound = uses.bound
    return scope


def module_scope(module: cst.Module, facts: Facts) -> Scope:
    callables = model_callables(facts)
    top_level = [
        s if not isinstance(s, (cst.FunctionDef, cst.ClassDef)) else cst.SimpleStatementLine([])
        for s in module.body
    ]
    before, at_use, _ = plan_moves(top_level, set(), callables)
    bound = set().union(*(_uses(s, callables).bound for s in top_level))
    return Scope(
        name="<module>", bound=bound, move_before=before, move_at_use=at_use, callables=callables
    )
