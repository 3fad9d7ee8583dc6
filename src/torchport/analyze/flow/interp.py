"""The abstract interpreter: runs a program over :class:`Val` instead of real values.

It walks each file's module body in order, following calls into the program's own functions
and classes (a function is interpreted again when a caller passes it something new, a bounded
number of times), and records the events placement depends on (:mod:`events`). Nothing of the
user's program is executed.

Statements are in :mod:`stmts`, expressions in :mod:`exprs`, calls in :mod:`calls` and the
torch/NumPy vocabulary in :mod:`torchapi`; this module holds the state they share.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

from torchport.analyze import kinds as K
from torchport.analyze.flow.events import CallSite, Events, Meet, Pin, Sink
from torchport.analyze.flow.program import ClassInfo, FuncInfo, Program, Unit, kind_of_class
from torchport.analyze.flow.values import (
    HOST,
    NONE,
    UNKNOWN,
    Kind,
    OKind,
    Origin,
    Place,
    Val,
    join,
    join_all,
    seq,
)

MAX_ANALYSES = 5  # interpretations of one function (a new caller may add to its arguments)
MAX_DEPTH = 40  # nested calls followed at once; deeper ones use what is known so far
BUILTINS = frozenset(dir(builtins))


@dataclass(eq=False)  # records: compared by identity
class Frame:
    """One function (or module body) being interpreted."""

    unit: Unit
    func: FuncInfo | None
    env: dict[str, Val]
    cls: ClassInfo | None = None
    returns: list[Val] = field(default_factory=list)
    yields: list[Val] = field(default_factory=list)
    stopped: bool = False  # after return/raise: the rest of the block does not run

    def lookup(self, name: str) -> Val | None:
        if name in self.env:
            return self.env[name]
        func = self.func
        while func is not None:
            if func.closure is not None and name in func.closure:
                return func.closure[name]
            func = func.parent
        return self.unit.globals.get(name)


DEVICE_WORDS = ("device", ".to(", ".cuda(")
# What names a device without placing anything on an accelerator: a parameter that defaults to
# none (passed along in a ``factory_kwargs`` dict, as library code does), and reading where a
# value already is (``torch.zeros(n, device=x.device)`` follows ``x``).
_NO_DEVICE = (
    "device=None",
    "device: Optional[torch.device] = None",
    '"device": device',
    ".device",
)


def _places_something(func: FuncInfo) -> bool:
    node, lines = func.node, func.unit.ctx.lines
    end = node.end_lineno or node.lineno
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and _is_docstring(body[0]):
        # "device" in prose places nothing: the signature, then the code after the docstring
        text = "\n".join(lines[node.lineno - 1 : body[0].lineno - 1])
        text += "\n" + "\n".join(lines[body[0].end_lineno or body[0].lineno : end])
    else:
        text = "\n".join(lines[node.lineno - 1 : end])
    for quiet in _NO_DEVICE:
        text = text.replace(quiet, "")
    return any(word in text for word in DEVICE_WORDS)


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


class Interp:
    """Interprets a :class:`Program`; :meth:`run` fills :attr:`events`."""

    def __init__(self, program: Program, *, all_leftovers: bool = True) -> None:
        self.program = program
        # False (for `check`): a function nobody calls is interpreted only when its own text
        # places something on a device; elsewhere its unknown arguments can show no conflict.
        self.all_leftovers = all_leftovers
        self.events = Events()
        self._origins: dict[tuple[int, OKind, str | None], Origin] = {}
        self._nested_funcs: dict[int, FuncInfo] = {}
        self._stack: list[FuncInfo] = []
        self._dirty: set[FuncInfo] = set()
        self.data_funcs: set[FuncInfo] = set()  # collate functions given to a DataLoader
        # expressions the port moves where they are used: their value is on the device after
        self.overrides: dict[int, Origin] = {}
        self.runs = 0

    # -- driver --------------------------------------------------------------------------------

    def run(self) -> None:
        if self.runs:
            self._reset()
        self.runs += 1
        for unit in self._unit_order():
            self.run_unit(unit)
        self._leftovers()

    def _reset(self) -> None:
        """Forget what the last run learnt, keeping the origins (decisions refer to them)."""
        self.events = Events()
        self.data_funcs = set()
        funcs = list(self._nested_funcs.values())
        for unit in self.program.units:
            unit.globals.clear()
            unit.analysed = False
            funcs += unit.functions.values()
            for cls in unit.classes.values():
                cls.attrs.clear()
                cls.instances.clear()
                funcs += cls.methods.values()
        for func in funcs:
            func.param_vals.clear()
            func.ret = None
            func.analyses = 0
            func.callers.clear()
            func.is_generator = False

    def _unit_order(self) -> list[Unit]:
        """Units whose module bodies others import run first (so their globals are known)."""
        order: list[Unit] = []
        seen: set[int] = set()

        def visit(unit: Unit) -> None:
            if id(unit) in seen:
                return
            seen.add(id(unit))
            for target in [*unit.ctx.imports.values(), *unit.relative_imports.values()]:
                for dotted in (target, target.rpartition(".")[0]):
                    dep = self.program.module_unit(dotted, unit)
                    if dep is not None and dep is not unit:
                        visit(dep)
            order.append(unit)

        for unit in self.program.units:
            visit(unit)
        return order

    def run_unit(self, unit: Unit) -> None:
        if unit.analysed:
            return
        unit.analysed = True
        from torchport.analyze.flow.stmts import exec_block

        frame = Frame(unit, None, unit.globals)
        exec_block(self, frame, unit.ctx.tree.body)

    def _leftovers(self) -> None:
        """Functions and methods nothing called: interpreted with unknown arguments."""
        for unit in self.program.units:
            for cls in unit.classes.values():
                init = cls.methods.get("__init__")
                ordered = [init] if init is not None else []
                ordered += [m for name, m in cls.methods.items() if name != "__init__"]
                for method in ordered:
                    if method.analyses == 0:
                        self.analyse_unbound(method)
            for func in unit.functions.values():
                if func.analyses == 0:
                    self.analyse_unbound(func)
        for func in list(self._nested_funcs.values()):
            if func.analyses == 0:
                self.analyse_unbound(func)

    def analyse_unbound(self, func: FuncInfo) -> None:
        from torchport.analyze.flow.guesses import param_guess

        if not self.all_leftovers and not _places_something(func):
            return
        if func.cls is not None and func.is_method and func.params:
            func.param_vals.setdefault(func.params[0].arg, self.self_val(func.cls))
        for arg in func.params:
            if arg.arg not in func.param_vals:
                func.param_vals[arg.arg] = param_guess(self, func, arg)
        self.analyse(func)

    def origins(self) -> list[Origin]:
        """Every origin the last run made."""
        return [o for o in self._origins.values() if o.run == self.runs]

    def all_functions(self) -> list[FuncInfo]:
        funcs = list(self._nested_funcs.values())
        for unit in self.program.units:
            funcs += unit.functions.values()
            for cls in unit.classes.values():
                funcs += cls.methods.values()
        return funcs

    # -- functions and classes -----------------------------------------------------------------

    def self_val(self, cls: ClassInfo) -> Val:
        kind = kind_of_class(cls)
        origins = frozenset([cls.state]) if cls.state is not None and kind is Kind.MODULE else None
        return Val(kind, origins or frozenset(), ref=cls)

    def nested_func(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, fr: Frame
    ) -> FuncInfo:
        found = self._nested_funcs.get(id(node))
        if found is None:
            name = node.name if not isinstance(node, ast.Lambda) else "<lambda>"
            found = FuncInfo(node, fr.unit, name, parent=fr.func, closure=fr.env)
            self._nested_funcs[id(node)] = found
        else:
            found.closure = fr.env
        return found

    def call_function(
        self,
        fr: Frame,
        node: ast.Call,
        func: FuncInfo,
        args: list[Val],
        *,
        kwargs: dict[str, Val] | None = None,
        bound: Val | None = None,
    ) -> Val:
        """Bind the arguments, interpret the function when they changed, return what it returns."""
        params = func.params
        kwargs = kwargs or {}
        values: dict[str, Val] = {}
        positional = [bound, *args] if bound is not None and func.is_method else list(args)
        plain = [*func.node.args.posonlyargs, *func.node.args.args]
        for param, value in zip(plain, positional, strict=False):
            if value is not None:
                values[param.arg] = value
        extra = positional[len(plain) :]
        vararg, kwarg = func.node.args.vararg, func.node.args.kwarg
        if vararg is not None:
            values[vararg.arg] = seq(join_all(v for v in extra if v is not None) if extra else None)
        names = {p.arg for p in params}
        for name, value in kwargs.items():
            if name in names:
                values[name] = value
        if kwarg is not None:
            rest = {k: v for k, v in kwargs.items() if k not in names}
            values[kwarg.arg] = Val(
                Kind.SEQ, fields=tuple(rest.items()), item=join_all(rest.values()) if rest else None
            )
        for param in params:
            values.setdefault(param.arg, self._default(func, param))
        changed = func.analyses == 0
        for name, value in values.items():
            before = func.param_vals.get(name)
            after = value if before is None else join(before, value)
            if before is None or after.key() != before.key():
                func.param_vals[name] = after
                changed = True
        self.events.calls[(id(node), id(func))] = CallSite(node, fr.unit, fr.func, func)
        if (fr.func, node) not in func.callers:
            func.callers.append((fr.func, node))
        if changed and func in self._stack:
            self._dirty.add(func)  # a recursive call gave it more: interpret it again after
        elif changed and func.analyses < MAX_ANALYSES and len(self._stack) < MAX_DEPTH:
            self.analyse(func)
        return self._result(func)

    @staticmethod
    def _default(func: FuncInfo, param: ast.arg) -> Val:
        """What a parameter the call leaves out holds: None for ``device=None`` (a factory
        given it makes a CPU tensor, ``.to(None)`` moves nothing), a host value for another
        default, unknown without one."""
        args = func.node.args
        plain = [*args.posonlyargs, *args.args]
        default: ast.expr | None = None
        if param in plain and plain.index(param) >= len(plain) - len(args.defaults):
            default = args.defaults[plain.index(param) - (len(plain) - len(args.defaults))]
        elif param in args.kwonlyargs:
            default = args.kw_defaults[args.kwonlyargs.index(param)]
        if default is None:
            return UNKNOWN
        none = isinstance(default, ast.Constant) and default.value is None
        return NONE if none else HOST

    def _result(self, func: FuncInfo) -> Val:
        if func.ret is not None:
            return func.ret
        return seq(UNKNOWN) if func.is_generator else UNKNOWN

    def analyse(self, func: FuncInfo) -> None:
        self._analyse_once(func)
        while func in self._dirty and func.analyses < MAX_ANALYSES:
            self._dirty.discard(func)
            self._analyse_once(func)
        self._dirty.discard(func)

    def _analyse_once(self, func: FuncInfo) -> None:
        from torchport.analyze.flow.exprs import evaluate
        from torchport.analyze.flow.stmts import exec_block

        func.analyses += 1
        self._stack.append(func)
        try:
            frame = Frame(func.unit, func, dict(func.param_vals), cls=func.cls)
            node = func.node
            if isinstance(node, ast.Lambda):
                result = evaluate(self, frame, node.body)
            else:
                exec_block(self, frame, node.body)
                result = join_all(frame.returns) if frame.returns else NONE
                if frame.yields:
                    func.is_generator = True
                    result = seq(join_all(frame.yields))
            func.ret = result if func.ret is None else join(func.ret, result)
        finally:
            self._stack.pop()

    def instantiate(
        self, fr: Frame, node: ast.Call, cls: ClassInfo, args: list[Val], kwargs: dict[str, Val]
    ) -> Val:
        kind = kind_of_class(cls)
        origins: frozenset[Origin] = frozenset()
        if kind is Kind.MODULE:
            label = f"`{cls.name}(...)` at {self.where(fr.unit, node)}"
            made = self.origin(OKind.MODEL, node, fr, Place.HOST, label, cls=cls)
            for owner in cls.lineage():
                if made not in owner.instances:
                    owner.instances.append(made)
            origins = frozenset([made])
        init = cls.method("__init__")
        if init is not None:
            self.call_function(fr, node, init, args, kwargs=kwargs, bound=self.self_val(cls))
        return Val(kind, origins, ref=cls)

    # -- origins and events --------------------------------------------------------------------

    def origin(
        self,
        kind: OKind,
        node: ast.AST,
        fr: Frame,
        written: Place,
        label: str,
        *,
        name: str | None = None,
        cls: ClassInfo | None = None,
        follows: frozenset[Origin] | None = None,
    ) -> Origin:
        """The origin made at ``node`` (the same object on every interpretation of it)."""
        key = (id(node), kind, name)
        found = self._origins.get(key)
        if found is None:
            found = Origin(kind, node, fr.unit, fr.func, written, label, cls=cls, name=name)
            self._origins[key] = found
        elif found.run != self.runs:  # first seen in this run: nothing carried over
            found.written, found.func, found.parent = written, fr.func, None
            found.follows, found.requires_grad = None, False
        else:
            found.written = written if found.written is written else found.written.join(written)
        found.run = self.runs
        if follows is not None:
            found.follows = follows if found.follows is None else found.follows | follows
        return found

    def where(self, unit: Unit, node: ast.AST) -> str:
        return f"{unit.path}:{getattr(node, 'lineno', 0)}"

    def meet(
        self,
        fr: Frame,
        node: ast.AST,
        operands: list[tuple[ast.expr, Val]],
        what: str,
        *,
        module: bool = False,
        index: bool = False,
        written: bool = False,
    ) -> None:
        # A module's input of unknown kind is kept: the port moves it all the same.
        tensors = [
            (e, v)
            for e, v in operands
            if v.tensorish or v.kind is Kind.MODULE or (module and v.kind is Kind.UNKNOWN)
        ]
        if len(tensors) >= 2:
            self.events.meets[id(node)] = Meet(
                node, fr.unit, fr.func, tensors, what, module, index, written
            )

    def sink(self, fr: Frame, expr: ast.expr, val: Val, how: str, what: str) -> None:
        if val.tensorish or val.kind is Kind.SEQ or how in ("numpy", "lengths"):
            self.events.sinks[id(expr)] = Sink(expr, fr.unit, fr.func, val, how, what)

    def pin(self, fr: Frame, node: ast.AST, val: Val, why: str) -> None:
        self.events.pins[id(node)] = Pin(node, fr.unit, val, why)

    def qualname(self, unit: Unit, expr: ast.expr) -> str | None:
        q = unit.ctx.qualname(expr)
        return K.canonical(q) if q else None

    def function_value(self, target: FuncInfo | ClassInfo) -> Val:
        if isinstance(target, ClassInfo):
            return Val(Kind.CLASS, ref=target)
        return Val(Kind.FUNC, ref=target)

    def name_value(self, fr: Frame, name: str) -> Val:
        found = fr.lookup(name)
        if found is not None:
            return found
        unit = fr.unit
        if name in unit.functions:
            return self.function_value(unit.functions[name])
        if name in unit.classes:
            return self.function_value(unit.classes[name])
        target = self.program.import_target(unit, name)
        if target is not None:
            symbol = self.program.lookup(target, unit)
            if symbol is not None:
                return self.function_value(symbol)
            module = self.program.module_unit(target, unit)
            if module is not None:
                self.run_unit(module)
            return Val(Kind.QUAL, qual=K.canonical(target))
        if name in BUILTINS:
            return Val(Kind.QUAL, qual=f"builtins.{name}")
        return UNKNOWN
