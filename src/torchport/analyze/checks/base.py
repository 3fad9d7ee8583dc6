"""The per-file analysis every detector receives, and the detector registry."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import TYPE_CHECKING

from torchport.analyze import kinds as K
from torchport.analyze.context import FileContext, Func, is_self_attr, walk_local
from torchport.analyze.edits import location
from torchport.analyze.hot import forward_nodes, hot_nodes, iterates_loader
from torchport.analyze.infer import device_of, keyword
from torchport.findings import Finding, Location
from torchport.rules import Rule

if TYPE_CHECKING:
    from torchport.analyze.placement import Placement


class Analysis(FileContext):
    """A FileContext plus the file-wide facts that several rules share (computed on demand).

    Many detectors ask the same questions about the same nodes (what a call returns, what a
    name resolves to); the answers are computed once per node and kept for the whole file.
    """

    def __init__(self, source: str, path: str, tree: ast.Module | None = None) -> None:
        super().__init__(source, path, tree)
        self._info_of: dict[ast.AST, K.Info | None] = {}
        self._qualname_of: dict[ast.AST, str | None] = {}
        self._function_of: dict[ast.AST, Func | None] = {}
        self._assignments: dict[ast.AST, dict[str, list[tuple[int, ast.expr]]]] = {}
        self._callee_modules: dict[ast.Call, K.Info | None] = {}

    def info(self, expr: ast.expr) -> K.Info | None:
        if expr not in self._info_of:
            self._info_of[expr] = super().info(expr)
        return self._info_of[expr]

    def qualname(self, expr: ast.expr) -> str | None:
        if expr not in self._qualname_of:
            root = expr
            while isinstance(root, ast.Attribute):
                root = root.value
            # only a dotted name that starts with an imported name has a qualified name
            imported = isinstance(root, ast.Name) and root.id in self.imports
            self._qualname_of[expr] = super().qualname(expr) if imported else None
        return self._qualname_of[expr]

    def function_of(self, node: ast.AST) -> Func | None:
        known = self._function_of
        if node in known:
            return known[node]
        # climb to the first function or known node, then record the answer for the whole
        # path: asking for every call of a file stays linear in its size
        path: list[ast.AST] = []
        found: Func | None = None
        while node in self.parents:
            path.append(node)
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found = node
                break
            if node in known:
                found = known[node]
                break
        for passed in path:
            known[passed] = found
        return found

    def release(self) -> None:
        """Break this analysis's reference cycles (scopes and the placement refer back to it)
        once its findings are made: the file's syntax tree, tens of thousands of objects, is
        then freed at once instead of by the cycle collector, which would trace all of it."""
        placement = self.__dict__.get("placement")
        if placement is not None:
            placement.release()
        for scope in self._scopes.values():
            scope.__dict__.clear()
        self.__dict__.clear()

    @cached_property
    def _calls_by_name(self) -> dict[str, list[ast.Call]]:
        out: dict[str, list[ast.Call]] = {}
        for call in self.calls:
            q = self.qualname(call.func)
            if q is not None:
                out.setdefault(q, []).append(call)
        return out

    @cached_property
    def _calls_by_method(self) -> dict[str, list[tuple[ast.Call, ast.Attribute]]]:
        out: dict[str, list[tuple[ast.Call, ast.Attribute]]] = {}
        for call in self.calls:
            if isinstance(call.func, ast.Attribute):
                out.setdefault(call.func.attr, []).append((call, call.func))
        return out

    @cached_property
    def hot(self) -> set[ast.AST]:
        return hot_nodes(self)

    @cached_property
    def forward(self) -> dict[ast.AST, str]:
        return forward_nodes(self)

    @cached_property
    def device_moves(self) -> list[tuple[ast.Call, K.Info | None]]:
        """``.to(accel)``/``.cuda()`` calls and what they were called on."""
        out: list[tuple[ast.Call, K.Info | None]] = []
        for call in self.calls:
            func = call.func
            if not isinstance(func, ast.Attribute) or func.attr not in ("to", "cuda"):
                continue
            if func.attr == "to":
                target = keyword(call, "device") or (call.args[0] if call.args else None)
                if device_of(self.scope(call), target, call.lineno) != "accel":
                    continue
            out.append((call, self.info(func.value)))
        return out

    @cached_property
    def placement(self) -> Placement | None:
        """Where every tensor of this file lives, followed across its functions (see
        :mod:`torchport.analyze.placement`); None where nothing is placed on a device."""
        if not self.uses_accelerator or not self._names_an_accelerator:
            return None
        from torchport.analyze.placement import Mode, analyse

        try:
            return analyse([self], Mode.CHECK)
        except RecursionError:
            return None  # nested beyond what the interpreter follows: the other rules still run

    def placed_on_device(self, node: ast.expr) -> bool:
        """Whether the placement analysis (values followed across functions) saw ``node``
        evaluate to a value on the device: what a metric's ``update(logits, y)`` is given."""
        placement = self.placement
        if placement is None:
            return False
        from torchport.analyze.flow.values import Kind, OKind

        val = placement.interp.events.values.get(id(node))
        if val is None:
            return False
        moved = bool(val.origins) and all(o.kind is OKind.MOVE for o in val.origins)
        if val.kind is not Kind.TENSOR and not (val.kind is Kind.UNKNOWN and moved):
            return False  # a batch of unknown kind moved with .to(): a tensor (or a module)
        # what a checkpoint holds may be numbers (its "step"): not known to be tensors
        return all(o.kind is not OKind.LOAD for o in val.origins) and placement.on_device(val)

    def flow_tensor(self, node: ast.expr) -> bool:
        """Whether the placement analysis saw ``node`` evaluate to a tensor wherever it ran: a
        parameter that every caller gives a tensor."""
        placement = self.placement
        if placement is None:
            return False
        from torchport.analyze.flow.values import Kind

        val = placement.interp.events.values.get(id(node))
        return val is not None and val.kind is Kind.TENSOR

    def placed_on_host(self, node: ast.expr) -> bool:
        """Whether the placement analysis saw ``node`` evaluate to a tensor made on the host
        wherever it ran (a helper's ``torch.arange(n)`` table, never moved)."""
        placement = self.placement
        if placement is None:
            return False
        from torchport.analyze.flow.values import Kind, Place

        val = placement.interp.events.values.get(id(node))
        if val is None or val.kind is not Kind.TENSOR or not val.origins:
            return False
        return placement.places(val) == {Place.HOST}

    def flow_dtype(self, node: ast.expr) -> str | None:
        """The dtype the placement analysis saw ``node`` evaluate to (``int64`` after
        ``.long()``), wherever it ran; None when it did not know."""
        placement = self.placement
        val = placement.interp.events.values.get(id(node)) if placement is not None else None
        return None if val is None else val.dtype

    @cached_property
    def _names_an_accelerator(self) -> bool:
        """Whether the file holds anything that puts a tensor on an accelerator for sure: a
        device string ("cuda:0", an f-string starting so), ``.cuda()``, ``.to(...)`` (an index
        such as ``.to(rank)`` is one), ``.type("torch.cuda...")``, ``torch.device(...)``, the
        accelerator API, or torchport's own library.

        The placement analysis reports a host tensor meeting one that is surely on the device:
        where nothing can be, it has nothing to report (library code that only passes a
        ``device`` argument along).
        """
        from torchport.analyze.flow.exprs import device_place
        from torchport.analyze.flow.values import Place

        if any(attr in _PLACING_METHODS for attr in self._calls_by_method):
            return True
        if any(last_name(call.func) in _PLACING_CALLS for call in self.calls):
            return True
        return any(
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value[:32].lstrip()[:3].lower() in _DEVICE_HEADS  # before the costlier parse
            and device_place(node.value) is Place.DEVICE
            for node in self.of_type(ast.Constant)
        )

    @cached_property
    def uses_accelerator(self) -> bool:
        """Whether the file moves anything to a device that may be an accelerator."""
        if self.device_moves:
            return True
        placed = ((c, keyword(c, "device")) for c in self.calls if c.keywords)
        return any(
            device_of(self.scope(c), device, c.lineno) == "accel"
            for c, device in placed
            if device is not None
        )

    @cached_property
    def moves_batches(self) -> bool:
        return any(
            (info is not None and info.batch) or self._from_loader_loop(call)
            for call, info in self.device_moves
        )

    def _from_loader_loop(self, call: ast.Call) -> bool:
        """``x.to(device)`` of a name a loop over batches binds (``for x, y in loader``, where
        inference could not say what ``dm.train_dataloader()`` gives)."""
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if not isinstance(receiver, ast.Name):
            return False
        for up in self.ancestors(call):
            if isinstance(up, ast.For) and iterates_loader(self, up.iter):
                bound = {n.id for n in ast.walk(up.target) if isinstance(n, ast.Name)}
                return receiver.id in bound
        return False

    @cached_property
    def makes_scaler(self) -> bool:
        return "GradScaler" in self.source and any(self.call_named(*K.GRAD_SCALERS))

    @cached_property
    def has_fallback(self) -> bool:
        """Whether the file ever asks if an accelerator is there (so "cuda" is not hard-coded)."""
        return "is_available" in self.source or "device_count" in self.source

    def callee_module(self, call: ast.Call) -> K.Info | None:
        """What ``call`` calls when that is evidently a module: ``model(x)``, ``self.fc(x)``,
        ``nn.Linear(2, 1)(x)``.

        Only those can be inferred to hold a module, so other callees are not inferred at all
        (most calls are tensor methods and torch functions). Several detectors ask about every
        call: the answer is kept per call.
        """
        try:
            return self._callee_modules[call]
        except KeyError:
            found = self._callee_modules[call] = self._callee_module(call)
            return found

    def _callee_module(self, call: ast.Call) -> K.Info | None:
        func = call.func
        if isinstance(func, ast.Name):
            if func.id not in self.bound_names:
                return None  # a builtin or a function: never a module held in a variable
            info = self.info(func)
        elif is_self_attr(func):
            # what the class's methods assign to it (no need for the calling function's scope,
            # the costly part of inference, when most such calls are of methods)
            cls = self.class_of(self.function_of(call) or self.tree)
            info = self.self_attr(cls, func.attr) if cls is not None else None  # type: ignore[attr-defined]
        elif isinstance(func, ast.Call):
            info = self.info(func)
        else:
            return None
        return info if info is not None and info.kind == K.MODULE else None

    def loc(self, node: ast.AST) -> Location:
        return location(self, node)

    def is_hot(self, node: ast.AST) -> bool:
        return node in self.hot

    def name(self, node: ast.AST) -> str:
        text = self.text(node)
        return text if len(text) <= 40 else text[:37] + "..."

    def call_named(self, *qualified: str) -> Iterable[ast.Call]:
        """Calls of these qualified names, in source order."""
        found = [c for q in set(qualified) for c in self._calls_by_name.get(q, [])]
        return sorted(found, key=self._order.__getitem__) if len(qualified) > 1 else found

    def method_calls(self, *names: str) -> Iterable[tuple[ast.Call, ast.Attribute]]:
        """``x.name(...)`` calls for each of these method names, in source order."""
        found = [pair for n in set(names) for pair in self._calls_by_method.get(n, [])]
        return sorted(found, key=lambda p: self._order[p[0]]) if len(names) > 1 else found

    def assignments(self, owner: ast.AST) -> dict[str, list[tuple[int, ast.expr]]]:
        """``name = value`` statements of one function (or the module), by name, in line order."""
        if owner not in self._assignments:
            table: dict[str, list[tuple[int, ast.expr]]] = {}
            for node in walk_local(owner):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name):
                        table.setdefault(target.id, []).append((node.lineno, node.value))
            for found in table.values():
                found.sort(key=lambda pair: pair[0])
            self._assignments[owner] = table
        return self._assignments[owner]

    @cached_property
    def passed_names(self) -> dict[ast.AST, set[str]]:
        """Per function (or the module): names handed to some call as a positional argument."""
        out: dict[ast.AST, set[str]] = {}
        for call in self.calls:
            names = {arg.id for arg in call.args if isinstance(arg, ast.Name)}
            if names:
                out.setdefault(self.function_of(call) or self.tree, set()).update(names)
        return out

    @cached_property
    def _order(self) -> dict[ast.Call, int]:
        return {c: i for i, c in enumerate(self.calls)}


Detector = Callable[[Analysis], Iterable[Finding]]
DETECTORS: dict[str, tuple[type[Rule], Detector]] = {}


_DEVICE_HEADS = frozenset({"cud", "mps", "xpu", "npu", "hpu", "met"})  # device strings start so
_PLACING_METHODS = frozenset({"cuda", "to", "type"})
_PLACING_CALLS = frozenset(
    {"device", "current_accelerator", "default_device", "to_device", "DeviceLoader"}
)


def last_name(func: ast.expr) -> str | None:
    """``f`` of ``f(...)``, ``obj.f(...)`` or ``a.b.f(...)``; None for other callees."""
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def detector(rule: type[Rule]) -> Callable[[Detector], Detector]:
    """Register ``func`` as the static detector of ``rule``."""

    def wrap(func: Detector) -> Detector:
        if rule.code in DETECTORS:
            raise ValueError(f"two static detectors for {rule.code}")
        DETECTORS[rule.code] = (rule, func)
        return func

    return wrap
