"""What the interpreter saw that placement depends on, recorded by the node it happened at.

A function may be interpreted more than once (a loop body twice, a function again when a new
caller passes something new); each event is keyed by its node, so the latest interpretation,
which has seen the most, is the one kept.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from torchport.analyze.flow.program import ClassInfo, FuncInfo, Unit
from torchport.analyze.flow.values import Origin, Place, Val


@dataclass(eq=False)  # records: compared by identity
class Meet:
    """Tensors that must be on one device: the operands of ``a + b``, a module and its input."""

    node: ast.AST
    unit: Unit
    func: FuncInfo | None
    operands: list[tuple[ast.expr, Val]]
    what: str  # "`==`", "`model(...)`", "torch.cat"
    module: bool = False  # the first operand is a module whose weights the others meet
    # indexing: a CPU index into a device tensor is allowed; only the indexed tensor must be
    # where a device index is
    index: bool = False
    # `acc += x`, `acc.add_(x)`: the first operand is written in place. A 0-dim host tensor may
    # be read by a device op, but not written with its result: it must be where x is.
    written: bool = False


@dataclass(eq=False)  # records: compared by identity
class Sink:
    """A value that must be on the host where it is used (``.numpy()``, ``np.mean(t)``...)."""

    expr: ast.expr
    unit: Unit
    func: FuncInfo | None
    val: Val
    # "numpy": the receiver of .numpy(); "cpu": an argument that needs .cpu(); "lengths": the
    # lengths of a packed sequence (a tensor or a list)
    how: str
    what: str


@dataclass(eq=False)  # records: compared by identity
class Pin:
    """Values that must stay on the host: the contents of a Dataset, a sampler's generator."""

    node: ast.AST
    unit: Unit
    val: Val
    why: str


@dataclass(eq=False)  # records: compared by identity
class Draw:
    """A random draw from tensors with an explicit generator: ``multinomial(p, generator=g)``.

    A generator must live where the tensors do; a CPU generator with device tensors fails.
    """

    node: ast.Call
    unit: Unit
    func: FuncInfo | None
    generator: Val
    tensors: list[tuple[ast.expr, Val]]


@dataclass(eq=False)  # records: compared by identity
class ModuleMove:
    """``model.to(device)``/``.cuda()``/``.cpu()``: modules move in place, all aliases with them."""

    node: ast.Call
    unit: Unit
    val: Val
    place: Place


@dataclass(eq=False)  # records: compared by identity
class AttrStore:
    """``self.attr = value`` in a method of a program class."""

    cls: ClassInfo
    attr: str
    stmt: ast.stmt
    value: ast.expr
    func: FuncInfo
    val: Val


@dataclass(eq=False)  # records: compared by identity
class LoaderSite:
    """A ``DataLoader(...)`` call: whether the port may add ``pin_memory``."""

    node: ast.Call
    unit: Unit
    func: FuncInfo | None
    star_kwargs: bool
    pin_memory: bool  # given already
    batches: set[Origin] = field(default_factory=set)  # the batches taken from it


@dataclass(eq=False)  # records: compared by identity
class CallSite:
    """A call of a program function, with what each argument was."""

    node: ast.Call
    unit: Unit
    caller: FuncInfo | None
    callee: FuncInfo


@dataclass(eq=False)  # records: compared by identity
class Events:
    """What the interpreter saw happen, keyed by source position."""

    meets: dict[int, Meet] = field(default_factory=dict)
    sinks: dict[int, Sink] = field(default_factory=dict)
    pins: dict[int, Pin] = field(default_factory=dict)
    draws: dict[int, Draw] = field(default_factory=dict)
    moves: dict[int, ModuleMove] = field(default_factory=dict)
    stores: dict[int, AttrStore] = field(default_factory=dict)
    loaders: dict[int, LoaderSite] = field(default_factory=dict)
    calls: dict[tuple[int, int], CallSite] = field(default_factory=dict)
    # modules move in place: the MOVE origins applied to each module origin
    placed: dict[Origin, set[Origin]] = field(default_factory=dict)
    values: dict[int, Val] = field(default_factory=dict)  # id(expr) -> its value
    before: dict[int, Val] = field(default_factory=dict)  # a moved expression's value unmoved
    casts: set[Origin] = field(default_factory=set)  # origins whose tensors are cast to float32
    sources: dict[Origin, set[Origin]] = field(default_factory=dict)  # batch -> dataset origins
