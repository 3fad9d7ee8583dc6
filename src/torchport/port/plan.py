"""From the placement analysis to the port's edits: where each thing moves, and how it is spelt.

The analysis (:mod:`torchport.analyze.placement`) decides *what* goes to the device; this module
decides how the code says so at each site:

- a module the program builds gets ``.to(device)`` where it is built;
- a factory gets ``device=`` (in ``forward``: an input's device; in a helper called from
  ``forward``: a ``device`` parameter threaded from the caller); a tensor made in a module's
  ``__init__`` becomes a buffer; data made from NumPy, and a random draw made once, get
  ``.to(device)`` (the CPU generator's numbers, as in the original);
- a batch moves where the loop (or ``next()``) binds it; a value that must stay on the host
  moves where it is used; a value a host-only use needs gets ``.cpu()`` there.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from torchport.analyze.flow.events import Draw
from torchport.analyze.flow.program import FuncInfo, Role, Unit
from torchport.analyze.flow.values import Kind, OKind, Origin, Place, Val
from torchport.analyze.placement import Placement
from torchport.findings import Edit, Finding, Location, Severity
from torchport.port import header, text
from torchport.port.options import PortOptions
from torchport.rules.device import UndecidableDevicePlacement

# torch calls that make data without a device= parameter: moved with .to() instead.
NO_DEVICE_PARAMETER = frozenset(
    {"torch.from_numpy", "torch.Tensor", "torch.FloatTensor", "torch.DoubleTensor",
     "torch.LongTensor", "torch.IntTensor", "torch.ByteTensor", "torch.BoolTensor",
     "torch.HalfTensor", "torch.frombuffer", "torch.ShortTensor", "torch.CharTensor"}
)  # fmt: skip
# Draws from torch's global generator. CUDA's generator gives other numbers than the CPU's, so
# a draw moved to the device changes the program's data, and every later CPU draw (the weights'
# initialisation, the shuffles) shifts with it. A draw made once is drawn on the host and
# copied: the ported program then computes on the numbers the original did.
RANDOM_FACTORIES = frozenset(
    {"torch.randn", "torch.rand", "torch.randint", "torch.randperm", "torch.normal"}
)
# where code runs again and again (a comprehension's element runs once per item)
LOOPS = (
    ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp
)  # fmt: skip


@dataclass
class UnitPlan:
    """What the port changes in one file."""

    unit: Unit
    device: str = "device"  # the module-level name of the selected device
    helper: str = "to_device"  # the nested-batch mover's name
    edits: list[Edit] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    uses_device: bool = False
    needs_helper: bool = False
    needs_bce: bool = False  # binary cross-entropy calls go through a helper (--amp bf16)
    has_selection: bool = False  # the file selects a device at module level already

    def note(self, node: ast.AST, message: str, severity: Severity | None = None) -> None:
        line, column = self.unit.ctx.start(node)
        location = Location(self.unit.path, line, column)
        self.notes.append(UndecidableDevicePlacement.finding(message, location, severity=severity))


class Planner:
    """Turns one :class:`Placement` (port mode) into a :class:`UnitPlan` per file."""

    def __init__(self, placement: Placement, options: PortOptions) -> None:
        self.placement = placement
        self.options = options
        self.plans = {unit: UnitPlan(unit) for unit in placement.program.units}
        self.threaded: dict[FuncInfo, str] = {}
        self._done: set[int] = set()  # ids of nodes already edited (one edit per site)

    def plan(self) -> dict[Unit, UnitPlan]:
        decided = self.placement.decided
        by_kind: dict[OKind, list[Origin]] = {}
        for origin, place in decided.items():
            if place is Place.DEVICE:
                by_kind.setdefault(origin.kind, []).append(origin)
        for origin in by_kind.get(OKind.MODEL, []):
            self._module(origin)
        for kind in (OKind.FACTORY, OKind.DATA):
            for origin in by_kind.get(kind, []):
                self._created(origin)
        self._batches(by_kind.get(OKind.BATCH, []))
        for origin in by_kind.get(OKind.PARAM, []):
            self._parameter(origin)
        for origin in [*by_kind.get(OKind.RESULT, []), *by_kind.get(OKind.GENERATOR, [])]:
            self._result(origin)
        for move in self.placement.moves.values():
            self._use_move(move.expr, move.unit, move.func, move.val, move.towards)
        for sink in self.placement.host_uses:
            self._host_use(sink.expr, sink.unit, sink.val, sink.how)
        for draw in self.placement.host_draws:
            self._host_draw(draw)
        return self.plans

    def _host_draw(self, draw: Draw) -> None:
        """``torch.multinomial(p, 1, generator=g)`` with ``p`` on the device and ``g`` on the
        host: draw from ``p.cpu()`` (the numbers the CPU program drew) and copy the result."""
        if id(draw.node) in self._done:
            return
        self._done.add(id(draw.node))
        ctx = draw.unit.ctx
        plan = self.plans[draw.unit]
        first = draw.tensors[0][0]
        simple = _simple(first)
        back = f"{ctx.text(first)}.device" if simple else self.device_at(draw.unit, draw.func)
        for expr, _ in draw.tensors:
            self._done.add(id(expr))
            plan.edits.extend(text.method_suffix(ctx, expr, ".cpu()"))
        plan.edits.extend(text.method_suffix(ctx, draw.node, f".to({back})"))

    # -- devices -------------------------------------------------------------------------------

    def device_at(self, unit: Unit, func: FuncInfo | None) -> str:
        """How code in ``func`` names the device: an input's, the module's, or the selected one."""
        roles = self.placement.roles_of(func)
        if func is not None and Role.MODEL in roles:
            return self._model_device(func)
        plan = self.plans[unit]
        plan.uses_device = True
        return plan.device

    def _model_device(self, func: FuncInfo) -> str:
        params = func.params[1:] if func.is_method else func.params
        for arg in params:
            value = func.param_vals.get(arg.arg)
            if value is not None and value.kind is Kind.TENSOR and self.placement.on_device(value):
                return f"{arg.arg}.device"
        if func.is_method and func.cls is not None and func.cls.is_module:
            return f"next({func.params[0].arg}.parameters()).device"
        return self._thread(func)

    def _thread(self, func: FuncInfo) -> str:
        """Give ``func`` a ``device`` parameter and make its callers pass theirs."""
        found = self.threaded.get(func)
        if found is not None:
            return found
        name = "device"
        self.threaded[func] = name
        node = func.node
        if any(p.arg == name for p in func.params):
            return name
        plan = self.plans[func.unit]
        if isinstance(node, ast.Lambda):
            plan.note(node, "a lambda makes a tensor on the CPU: pass the device in")
            return name
        plan.edits.append(text.add_parameter(func.unit.ctx, node, f"{name}=None"))
        for site in list(self.placement.interp.events.calls.values()):
            if site.callee is not func or id(site.node) in self._done:
                continue
            roles = self.placement.roles_of(site.caller)
            if roles <= {Role.INIT} or any(k.arg == name for k in site.node.keywords):
                continue
            self._done.add(id(site.node))
            device = self.device_at(site.unit, site.caller)
            self.plans[site.unit].edits.append(
                _add_keyword(site.unit, site.node, f"{name}={device}")
            )
        return name

    # -- decided origins -----------------------------------------------------------------------

    def _module(self, origin: Origin) -> None:
        node = origin.node
        if not isinstance(node, ast.Call) or id(node) in self._done:
            return
        self._done.add(id(node))
        ctx = origin.unit.ctx
        device = self.device_at(origin.unit, origin.func)
        self.plans[origin.unit].edits.extend(text.method_suffix(ctx, node, f".to({device})"))

    def _created(self, origin: Origin) -> None:
        roles = self.placement.roles_of(origin.func)
        if Role.INIT in roles:
            from torchport.port.rewrites import buffers_for

            buffers_for(self, origin)
        if not roles & {Role.MODEL, Role.SCRIPT}:
            return
        node = origin.node
        if not isinstance(node, ast.Call) or id(node) in self._done:
            return
        self._done.add(id(node))
        unit = origin.unit
        device = self.device_at(unit, origin.func)
        plan = self.plans[unit]
        qual = self.placement.interp.qualname(unit, node.func) or ""
        given = next((k for k in node.keywords if k.arg == "device"), None)
        if given is not None:
            plan.edits.append(text.replace(unit.ctx, given.value, device))
        elif (
            qual in NO_DEVICE_PARAMETER
            or any(k.arg == "generator" for k in node.keywords)
            or (qual in RANDOM_FACTORIES and Role.MODEL not in roles and _drawn_once(unit, node))
        ):
            # from NumPy data, or drawn from a CPU generator or once: the same values, copied
            plan.edits.extend(text.method_suffix(unit.ctx, node, f".to({device})"))
        else:
            plan.edits.append(_add_keyword(unit, node, f"device={device}"))

    def _batches(self, origins: list[Origin]) -> None:
        by_site: dict[int, list[Origin]] = {}
        for origin in origins:
            by_site.setdefault(id(origin.node), []).append(origin)
        skip = self._device_loaded_batches()
        for group in by_site.values():
            kept = [o for o in group if o not in skip]
            if kept:
                self._move_batches(kept)

    def _device_loaded_batches(self) -> set[Origin]:
        from torchport.port.rewrites import device_loaded

        return device_loaded(self)

    def _move_batches(self, group: list[Origin]) -> None:
        first = group[0]
        node, unit = first.node, first.unit
        device = self.device_at(unit, first.func)
        lines = []
        for origin in _in_target_order(node, group):
            name = origin.name or ""
            value = _bound_value(self, node, name)
            if value is not None and value.kind is Kind.TENSOR:
                lines.append(f"{name} = {name}.to({device}, non_blocking=True)")
            else:
                lines.append(f"{name} = {self._helper(unit)}({name}, {device})")
        ctx = unit.ctx
        if isinstance(node, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith):
            edit = text.body_top(ctx, node.body, lines)
        else:
            edit = text.insert_after(ctx, node, lines) if isinstance(node, ast.stmt) else None
        if edit is None:
            message = "cannot insert the move of this batch here (one-line block): move it to "
            self.plans[unit].note(node, message + "the device where it enters the step")
            return
        self.plans[unit].edits.append(edit)

    def _helper(self, unit: Unit) -> str:
        plan = self.plans[unit]
        if self.options.runtime_dependency:
            return "torchport.to_device"
        plan.needs_helper = True
        return plan.helper

    def _parameter(self, origin: Origin) -> None:
        func, node = origin.func, origin.node
        if func is None or isinstance(func.node, ast.Lambda) or id(node) in self._done:
            return
        self._done.add(id(node))
        name = origin.name or ""
        device = self.device_at(func.unit, func)
        value = func.param_vals.get(name)
        if value is not None and value.kind is Kind.TENSOR:
            line = f"{name} = {name}.to({device})"
        else:
            line = f"{name} = {self._helper(func.unit)}({name}, {device})"
        edit = text.body_top(func.unit.ctx, func.node.body, [line])
        if edit is not None:
            self.plans[func.unit].edits.append(edit)

    def _result(self, origin: Origin) -> None:
        node = origin.node
        if not isinstance(node, ast.Call) or id(node) in self._done:
            return
        self._done.add(id(node))
        unit = origin.unit
        device = self.device_at(unit, origin.func)
        if origin.kind is OKind.GENERATOR:
            self.plans[unit].edits.append(_add_keyword(unit, node, f"device={device}"))
            return
        self._move_expr(unit, node, self.placement.interp.events.values.get(id(node)), device)

    # -- moves at use and host uses -------------------------------------------------------------

    def _use_move(
        self,
        expr: ast.expr,
        unit: Unit,
        func: FuncInfo | None,
        value: Val,
        towards: tuple[ast.expr, Val] | None,
    ) -> None:
        if id(expr) in self._done:
            return
        self._done.add(id(expr))
        device = None
        if towards is not None and towards[1].kind is Kind.TENSOR and _simple(towards[0]):
            device = f"{unit.ctx.text(towards[0])}.device"
        self._move_expr(unit, expr, value, device or self.device_at(unit, func))

    def _move_expr(self, unit: Unit, expr: ast.expr, value: Val | None, device: str) -> None:
        ctx = unit.ctx
        if value is not None and value.kind is Kind.TENSOR:
            self.plans[unit].edits.extend(text.method_suffix(ctx, expr, f".to({device})"))
        else:
            helper = self._helper(unit)
            self.plans[unit].edits.extend(text.wrap(ctx, expr, f"{helper}(", f", {device})"))

    def _host_use(self, expr: ast.expr, unit: Unit, value: Val, how: str) -> None:
        if id(expr) in self._done:
            return
        self._done.add(id(expr))
        ctx = unit.ctx
        plan = self.plans[unit]
        if how == "numpy":
            detached = (
                isinstance(expr, ast.Call)
                and isinstance(expr.func, ast.Attribute)
                and expr.func.attr == "detach"
            )
            plan.edits.extend(
                text.method_suffix(ctx, expr, ".cpu()" if detached else ".detach().cpu()")
            )
        elif value.kind is Kind.TENSOR:
            plan.edits.extend(text.method_suffix(ctx, expr, ".cpu()"))
        elif how == "lengths":  # a tensor or a list: pack_padded_sequence takes either on the host
            torch = header.torch_name(ctx) or "torch"
            plan.edits.extend(text.wrap(ctx, expr, f"{torch}.as_tensor(", ").cpu()"))
        else:
            plan.note(expr, f"`{ctx.text(expr)[:40]}` may hold tensors on the device where host "
                      "data is needed: copy them to the host first (`.cpu()`)")  # fmt: skip


def _add_keyword(unit: Unit, call: ast.Call, keyword: str) -> Edit:
    from torchport.analyze.edits import add_keyword

    return add_keyword(unit.ctx, call, keyword)


def _simple(expr: ast.expr) -> bool:
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return isinstance(expr, ast.Name)


def _in_target_order(node: ast.AST, group: list[Origin]) -> list[Origin]:
    target = getattr(node, "target", None) or (
        node.targets[0] if isinstance(node, ast.Assign) else None
    )
    order = (
        [n.id for n in ast.walk(target) if isinstance(n, ast.Name)] if target is not None else []
    )
    return sorted(group, key=lambda o: order.index(o.name) if o.name in order else len(order))


def _bound_value(planner: Planner, node: ast.AST, name: str) -> Val | None:
    """The value ``name`` was bound to at ``node`` (a loop target, an assignment target)."""
    targets: list[ast.AST] = []
    if isinstance(node, ast.For | ast.AsyncFor):
        targets = [node.target]
    elif isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.With | ast.AsyncWith):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    values = planner.placement.interp.events.values
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name) and sub.id == name and id(sub) in values:
                return values[id(sub)]
    return None


def _drawn_once(unit: Unit, node: ast.AST, seen: frozenset[str] = frozenset()) -> bool:
    """The code at ``node`` runs once: in no loop, in a function only called from such code."""
    ctx = unit.ctx
    for up in ctx.ancestors(node):
        if isinstance(up, (*LOOPS, ast.Lambda)):
            return False
        if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef):
            if up.name in seen:  # recursion
                return False
            callers = ctx.calls_named.get(up.name, [])
            return all(_drawn_once(unit, c, seen | {up.name}) for c in callers)
    return True
