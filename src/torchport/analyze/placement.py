"""Where every tensor of a program lives, and what must change for it to run on a device.

One analysis serves ``check`` and ``port``. The interpreter (:mod:`flow`) records which tensors
meet which (``a + b``, a module and its input) and where each was made (its origins). Here:

- ``check``: places are as the program writes them; a host tensor that meets a device tensor is
  a conflict, reported with both creation sites.
- ``port``: every module the program builds goes to the device; then, round after round, each
  host origin that meets the device is decided onto it at its source (a factory gets
  ``device=``, a batch moves where it is bound) unless it must stay on the host (a dataset's
  contents), in which case it moves where it is used. Values that reach a host-only use (NumPy,
  ``.numpy()``, the lengths of a packed sequence) get ``.cpu()`` there.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from torchport.analyze.context import FileContext
from torchport.analyze.flow import vocab
from torchport.analyze.flow.events import Draw, Meet, Sink
from torchport.analyze.flow.interp import Interp
from torchport.analyze.flow.program import FuncInfo, Program, Role, Unit
from torchport.analyze.flow.values import Kind, OKind, Origin, Place, Val, all_origins

MAX_ROUNDS = 6  # re-interpretations after moves at use (each may reveal new meetings)
MOVABLE = frozenset(
    {OKind.FACTORY, OKind.DATA, OKind.BATCH, OKind.LOAD, OKind.PARAM, OKind.RESULT,
     OKind.GENERATOR}
)  # fmt: skip


class Mode(enum.Enum):
    CHECK = "check"
    PORT = "port"


@dataclass(eq=False)  # records: compared by identity
class Conflict:
    """A host tensor meets a device tensor at ``meet``."""

    meet: Meet
    expr: ast.expr  # the host operand
    host: list[Origin]
    device: tuple[ast.expr, Val]  # an operand on the device


@dataclass(eq=False)  # records: compared by identity
class UseMove:
    """An operand the port moves where it is used (its source must stay on the host)."""

    expr: ast.expr
    unit: Unit
    func: FuncInfo | None
    val: Val
    towards: tuple[ast.expr, Val] | None  # a device operand of the same meeting, if any
    origin: Origin  # the MOVE origin the interpreter gives the moved value


@dataclass(eq=False)  # records: compared by identity
class Placement:
    """Where the values of a program live, and the conflicts and moves found."""

    program: Program
    interp: Interp
    mode: Mode
    aware: bool  # the program already places things on a device itself
    decided: dict[Origin, Place] = field(default_factory=dict)
    moves: dict[int, UseMove] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)
    host_uses: list[Sink] = field(default_factory=list)  # device values at host-only uses
    host_draws: list[Draw] = field(default_factory=list)  # device draws with a CPU generator
    roles: dict[FuncInfo, set[Role]] = field(default_factory=dict)
    # (path, line, call): creation sites a run showed to need the device (port --verify)
    forced: set[tuple[str, int, str]] = field(default_factory=set)
    _places: dict[Origin, Place] = field(default_factory=dict)

    def release(self) -> None:
        """Break the reference cycles between units, functions, classes and origins, so that
        the whole analysis is freed as soon as the last reference to it goes, without the
        cycle collector tracing it (a tenth of `check`'s time, paid after every file)."""
        interp = self.interp
        for func in interp.all_functions():
            func.__dict__.clear()
        for unit in self.program.units:
            for cls in unit.classes.values():
                cls.__dict__.clear()
            unit.__dict__.clear()
        for origin in interp.origins():
            origin.__dict__.clear()
        for owner in (interp, self.program, self):
            owner.__dict__.clear()

    # -- places --------------------------------------------------------------------------------

    def place(self, origin: Origin) -> Place:
        found = self._places.get(origin)
        if found is None:
            self._places[origin] = Place.ANY  # a cycle of "follows" reads as unknown
            found = self._place(origin)
            self._places[origin] = found
        return found

    def _place(self, origin: Origin) -> Place:
        if origin in self.decided:
            return self.decided[origin]
        if origin.kind is OKind.MODEL:
            moves = self.interp.events.placed.get(origin)
            if origin.parent is not None:
                # moved with the module that holds it, and by its own moves: a model moved
                # before an EMA wrapper deep-copies it stays on the device, the wrapper unmoved
                held = self.place(origin.parent)
                if not moves:
                    return held
                own = _join(self.place(m) for m in moves)
                return own if held is Place.HOST else held.join(own)
            if (
                self.mode is Mode.PORT
                and not self.aware
                and Role.DATA not in self.roles_of(origin.func)
            ):
                return Place.DEVICE  # the port puts every module on the device
            return _join(self.place(m) for m in moves) if moves else Place.HOST
        if origin.kind is OKind.STATE:
            if self.mode is Mode.PORT and not self.aware:
                return Place.DEVICE
            cls = origin.cls
            instances = cls.instances if cls is not None else []
            return _join(self.place(i) for i in instances) if instances else Place.ANY
        if origin.kind is OKind.LOAD and origin in self.interp.events.placed:
            return _join(self.place(m) for m in self.interp.events.placed[origin])
        if origin.follows:
            return _join(self.place(f) for f in origin.follows)
        return origin.written

    def places(self, val: Val) -> set[Place]:
        return {self.place(o) for o in val.origins}

    def on_device(self, val: Val) -> bool:
        places = self.places(val)
        return Place.DEVICE in places or (
            self.mode is Mode.PORT and Place.ANY in places and not self.aware
        )

    def roles_of(self, func: FuncInfo | None) -> set[Role]:
        if func is None:
            return {Role.SCRIPT}
        return self.roles.get(func) or {Role.SCRIPT}

    # -- solving -------------------------------------------------------------------------------

    def solve(self) -> None:
        for _ in range(MAX_ROUNDS):
            self.roles = compute_roles(self.program, self.interp)
            if self.mode is Mode.PORT and not self.aware:
                self._decide_roots()
            self._decide_forced()
            added = self._round()
            if not added:
                break
            self.interp.run()
        self._prune_moves()
        self._host_uses()
        self._draws()

    def _prune_moves(self) -> None:
        """Moves at use that later decisions made pointless: the value is on the device anyway
        (a meeting seen before the call site that feeds it was moved)."""
        self._places.clear()
        before = self.interp.events.before
        for key in list(self.moves):
            unmoved = before.get(key)
            origins = all_origins(unmoved) if unmoved is not None else set()
            if origins and all(self.place(o) is Place.DEVICE for o in origins):
                del self.moves[key]

    def _decide_roots(self) -> None:
        """Modules the program's own code builds go to the device where they are built (those a
        module's ``__init__`` builds are its submodules, once registered)."""
        for origin in self.interp.origins():
            root = origin.kind is OKind.MODEL and origin.parent is None
            if root and Role.SCRIPT in self.roles_of(origin.func):
                self.decided.setdefault(origin, Place.DEVICE)
        # A tensor a module keeps as an attribute is state: it moves with the module (a buffer).
        for store in self.interp.events.stores.values():
            if (
                store.cls.is_module
                and store.func.name == "__init__"
                and store.val.kind is Kind.TENSOR
                and store.val.qual != "torch.nn.Parameter"
            ):
                for origin in store.val.origins:
                    if origin.kind in (OKind.FACTORY, OKind.DATA):
                        self.decided.setdefault(origin, Place.DEVICE)

    def _decide_forced(self) -> None:
        """Sites a run showed to need the device (``port --verify``): decided onto it, also
        where the analysis had not seen a tensor being made (a call it cannot follow)."""
        lines = {(path, line) for path, line, _ in self.forced}
        seen: set[tuple[str, int]] = set()
        for origin in self.interp.origins():
            key = (origin.unit.path, getattr(origin.node, "lineno", 0))
            if key in lines and origin.kind in MOVABLE:
                self.decided.setdefault(origin, Place.DEVICE)
                seen.add(key)
        for path, line, call in self.forced:
            if (path, line) not in seen:
                for origin in self._unseen_sites(path, line, call):
                    self.decided.setdefault(origin, Place.DEVICE)

    def _unseen_sites(self, path: str, line: int, call: str) -> list[Origin]:
        unit = self.program.by_path.get(path) or next(
            (u for u in self.program.units if u.path == path), None
        )
        if unit is None:
            return []
        name = call.rsplit(".", 1)[-1]
        kind = OKind.DATA if f"torch.{name}" in vocab.DATA else OKind.FACTORY
        funcs = {id(f.node): f for f in self.interp.all_functions()}
        out = []
        for node in unit.ctx.calls:
            called = (
                node.func.attr
                if isinstance(node.func, ast.Attribute)
                else getattr(node.func, "id", "")
            )
            if node.lineno == line and called == name:
                owner = unit.ctx.function_of(node)
                func = funcs.get(id(owner)) if owner is not None else None
                label = f"`{call}` at {path}:{line}"
                out.append(Origin(kind, node, unit, func, Place.HOST, label))
        return out

    def _round(self) -> bool:
        """Decide (or move at use) every host origin that meets the device; True if moves at
        use were added (the program must be interpreted again to see past them)."""
        pinned = self._pinned()
        added = False
        changed = True
        # Origins moved at use in a function this round: their other meetings in that function
        # are seen again after the re-interpretation (what was computed there from the moved
        # value is on the device then); meetings elsewhere are independent and resolved now.
        self._moving: set[tuple[Origin, FuncInfo | None]] = set()
        while changed:
            changed = False
            self._places.clear()
            self.conflicts = []
            for meet in self.interp.events.meets.values():
                for conflict in self._conflicts(meet):
                    self.conflicts.append(conflict)
                    if self.mode is not Mode.PORT:
                        continue
                    result = self._resolve(conflict, pinned)
                    changed = changed or result == "decided"
                    added = added or result == "moved"
        return added

    def _pinned(self) -> set[Origin]:
        out: set[Origin] = set()
        for pin in self.interp.events.pins.values():
            out |= all_origins(pin.val)
        return out

    def _conflicts(self, meet: Meet) -> Iterable[Conflict]:
        if not self.roles_of(meet.func) & {Role.SCRIPT, Role.MODEL}:
            return  # a module's __init__ and a dataset run on the host, before anything moves
        devices = [(e, v) for e, v in meet.operands if self._certain_device(v)]
        if meet.index:
            # `x[i]`: a host index into a device tensor is allowed; a device index is not
            # allowed into a host tensor, which is the one to move
            devices = [(e, v) for e, v in devices if e is not meet.operands[0][0]]
            operands = meet.operands[:1]
        else:
            operands = meet.operands
        if not devices:
            return
        for expr, val in operands:
            if val.kind is Kind.MODULE or (val.scalar and not _written(meet, expr)):
                continue
            if meet.module and val.kind is Kind.UNKNOWN and not val.origins:
                # the program's own step gives a model something the analysis cannot see into
                if self._porting and Role.SCRIPT in self.roles_of(meet.func):
                    yield Conflict(meet, expr, [], devices[0])
                continue
            host = [o for o in val.origins if self.place(o) is Place.HOST]
            # what the program already places is only changed where it surely fails
            if host and (self._porting or self._all_host(val)):
                towards = next(((e, v) for e, v in devices if e is not expr), devices[0])
                yield Conflict(meet, expr, host, towards)

    @property
    def _porting(self) -> bool:
        """Porting a program that does not place anything itself: everything is decided here."""
        return self.mode is Mode.PORT and not self.aware

    def _certain_device(self, val: Val) -> bool:
        """On the device wherever the program runs on one. A value made from both a device and
        a host tensor counts: the op that made it needed them on one device (and is reported
        where it failed), so on a GPU it is on the GPU."""
        if self._porting:
            return self.on_device(val)
        places = self.places(val)
        return Place.DEVICE in places and Place.ANY not in places

    def _all_host(self, val: Val) -> bool:
        return bool(val.origins) and all(self.place(o) is Place.HOST for o in val.origins)

    def _resolve(self, conflict: Conflict, pinned: set[Origin]) -> str:
        if not conflict.host:
            return self._move_at_use(conflict, None)
        result = ""
        for origin in conflict.host:
            if origin in self.decided or (origin, conflict.meet.func) in self._moving:
                continue
            if origin not in pinned and self._movable(origin):
                self.decided[origin] = Place.DEVICE
                result = "decided"
                continue
            result = self._move_at_use(conflict, origin) or result
            self._moving.add((origin, conflict.meet.func))
        return result

    def _move_at_use(self, conflict: Conflict, origin: Origin | None) -> str:
        meet = conflict.meet
        result = ""
        for expr, unit, func in self._boundary(conflict.expr, meet.unit, meet.func, origin, 0):
            if id(expr) in self.moves:
                continue
            moved = Origin(OKind.MOVE, expr, unit, func, Place.DEVICE, "a move at use")
            val = self.interp.events.values.get(id(expr)) or _value(conflict)
            towards = conflict.device if expr is conflict.expr else None
            self.moves[id(expr)] = UseMove(expr, unit, func, val, towards, moved)
            self.interp.overrides[id(expr)] = moved
            result = "moved"
        return result

    def _boundary(
        self, expr: ast.expr, unit: Unit, func: FuncInfo | None, origin: Origin | None, depth: int
    ) -> list[tuple[ast.expr, Unit, FuncInfo | None]]:
        """Where to move a value that must stay on the host at its source: as it enters the
        code that meets the device (the argument of ``model(x)``), not inside ``forward``."""
        root = _root_name(expr)
        if depth > 8 or func is None or root is None or not func.callers:
            return [(expr, unit, func)]
        names = [p.arg for p in func.params]
        if root.id not in names:
            return [(expr, unit, func)]
        sites: list[tuple[ast.expr, Unit, FuncInfo | None]] = []
        for caller, call in func.callers:
            argument = _argument(func, call, root.id)
            value = self.interp.events.values.get(id(argument)) if argument is not None else None
            if argument is None or value is None:
                continue
            if origin is not None and origin not in all_origins(value):
                continue
            caller_unit = caller.unit if caller is not None else _unit_of(self.program, call, unit)
            sites += self._boundary(argument, caller_unit, caller, origin, depth + 1)
        return sites or [(expr, unit, func)]

    def _movable(self, origin: Origin) -> bool:
        if origin.kind not in MOVABLE:
            return False
        roles = self.roles_of(origin.func)
        if Role.DATA in roles:
            return False
        if origin.kind is OKind.BATCH:
            return origin.name is not None and isinstance(
                origin.node, ast.For | ast.AsyncFor | ast.Assign | ast.With
            )
        if Role.INIT in roles and origin.kind in (OKind.FACTORY, OKind.DATA):
            return self._stored_in_init(origin)
        return True

    def _stored_in_init(self, origin: Origin) -> bool:
        return any(
            store.func.name == "__init__" and origin in all_origins(store.val)
            for store in self.interp.events.stores.values()
        )

    def _host_uses(self) -> None:
        self._places.clear()
        self.host_uses = [
            sink for sink in self.interp.events.sinks.values() if self._needs_host(sink)
        ]

    def _draws(self) -> None:
        """Draws from device tensors with a generator on the host: the port draws on the host
        (the same numbers as the CPU program) and copies the result over."""
        self.host_draws = [
            draw
            for draw in self.interp.events.draws.values()
            if draw.generator.origins
            and all(self.place(o) is Place.HOST for o in draw.generator.origins)
            and any(self.on_device(v) for _, v in draw.tensors)
        ]

    def _needs_host(self, sink: Sink) -> bool:
        origins = all_origins(sink.val)
        if self.mode is Mode.CHECK:
            return bool(origins) and self.places(sink.val) == {Place.DEVICE}
        if not origins:
            # `.numpy()` of a value from nowhere the analysis sees (a parameter nobody passes)
            unseen = sink.how == "numpy" or (
                sink.how == "lengths" and sink.val.kind is Kind.UNKNOWN
            )
            return unseen and not self.aware
        return any(self.place(o) is not Place.HOST for o in origins)


def _root_name(expr: ast.expr) -> ast.Name | None:
    """``labels`` for ``labels``, ``labels.unsqueeze(0)`` or ``labels.float()[mask]``: the
    parameter a value made from it (on its device) comes from."""
    while True:
        if isinstance(expr, ast.Name):
            return expr
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            expr = expr.func.value
        elif isinstance(expr, ast.Attribute | ast.Subscript):
            expr = expr.value
        else:
            return None


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _value(conflict: Conflict) -> Val:
    return next(v for e, v in conflict.meet.operands if e is conflict.expr)


def _argument(func: FuncInfo, call: ast.Call, name: str) -> ast.expr | None:
    """The expression a call passes for parameter ``name`` (``self`` is bound, not passed)."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    plain = [*func.node.args.posonlyargs, *func.node.args.args]
    names = [p.arg for p in plain]
    if func.is_method and names:
        names = names[1:]
    if name in names:
        index = names.index(name)
        if index < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[: index + 1]
        ):
            return call.args[index]
    return None


def _unit_of(program: Program, node: ast.AST, default: Unit) -> Unit:
    for unit in program.units:
        if any(node is n for n in unit.ctx.calls):
            return unit
    return default


def _join(places: Iterable[Place]) -> Place:
    out: Place | None = None
    for place in places:
        out = place if out is None else out.join(place)
    return out or Place.HOST


def compute_roles(program: Program, interp: Interp) -> dict[FuncInfo, set[Role]]:
    """Where each function runs: its own nature (a module's forward) or its callers'."""
    funcs = interp.all_functions()
    roles: dict[FuncInfo, set[Role]] = {}
    for func in funcs:
        own = _own_role(func, interp)
        roles[func] = {own} if own is not None else set()
    changed = True
    while changed:
        changed = False
        for func in funcs:
            if _own_role(func, interp) is not None:
                continue
            found: set[Role] = set()
            for caller, _ in func.callers:
                found |= roles.get(caller, set()) if caller is not None else {Role.SCRIPT}
            if func.parent is not None:
                found |= roles.get(func.parent, set())
            if not found:
                found = {Role.SCRIPT}
            if not found <= roles[func]:
                roles[func] |= found
                changed = True
    return roles


def _own_role(func: FuncInfo, interp: Interp) -> Role | None:
    if func in interp.data_funcs:
        return Role.DATA
    cls = func.cls
    if cls is None:
        return None
    if cls.is_dataset:
        return Role.DATA
    if cls.is_module:
        return Role.INIT if func.name == "__init__" else Role.MODEL
    return None


def is_aware(interp: Interp) -> bool:
    """Whether the program already puts modules or tensors on an accelerator itself: it moves
    something with ``.to(...)``/``.cuda()``, or makes a tensor with ``device=`` one."""
    for move in interp.events.moves.values():
        if move.place is not Place.HOST:
            return True
    for origin in interp.origins():
        node = origin.node
        if origin.written is Place.HOST or not isinstance(node, ast.Call):
            continue
        moved = isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda")
        made = origin.kind in (OKind.FACTORY, OKind.DATA) and any(
            k.arg == "device" for k in node.keywords
        )
        if (origin.kind is OKind.MOVE and moved) or made:
            return True
    return False


def analyse(
    contexts: list[FileContext],
    mode: Mode,
    all_paths: Iterable[str] = (),
    force: Iterable[tuple[str, int, str]] = (),
) -> Placement:
    """The placement of a program made of ``contexts`` (``all_paths``: every file given, for
    module names when the program is part of a larger set; ``force``: (path, line, call)
    creation sites to put on the device whatever the analysis finds)."""
    program = Program(contexts, all_paths)
    interp = Interp(program, all_leftovers=mode is Mode.PORT)
    interp.run()
    placement = Placement(program, interp, mode, aware=is_aware(interp), forced=set(force))
    placement.solve()
    return placement


def _written(meet: Meet, expr: ast.expr) -> bool:
    """Whether ``expr`` is the tensor ``meet`` writes in place (``acc`` of ``acc += x``)."""
    return meet.written and expr is meet.operands[0][0]
