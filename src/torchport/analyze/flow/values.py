"""What a value is to the placement analysis: its kind, and the places its tensors were made.

A :class:`Val` says what an expression evaluates to (a tensor, a module, a loader, a tuple of
tensors...) and carries its :class:`Origin` set: the sites where the tensors in it were created
(a factory call, ``torch.tensor(data)``, a batch taken from a loader, an explicit ``.to()``...).
Where a value lives is never stored on the value: it is worked out from its origins, so that a
decision taken about one origin ("create this factory on the device") changes every value that
came from it at once.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from torchport.analyze.flow.program import ClassInfo, FuncInfo, Unit


class Kind(enum.Enum):
    TENSOR = "tensor"
    MODULE = "module"
    OPTIMIZER = "optimizer"
    SCHEDULER = "scheduler"
    SCALER = "grad scaler"
    LOADER = "loader"
    DATASET = "dataset"
    SAMPLER = "sampler"
    GENERATOR = "generator"
    DEVICE = "device"
    NDARRAY = "ndarray"
    DIST = "distribution"
    SEQ = "container"  # tuple, list, dict, set, iterator
    HOST = "host value"  # numbers, strings, torch.Size...: never a tensor
    NONE = "None"
    FUNC = "function"  # a function, method or lambda of the analysed program
    CLASS = "class"  # a class of the analysed program
    OBJECT = "object"  # an instance of a non-module class of the analysed program
    QUAL = "name"  # something imported from outside the program (torch.nn, numpy.mean...)
    UNKNOWN = "unknown"


class Place(enum.Enum):
    HOST = "host"
    DEVICE = "device"
    ANY = "either"

    def join(self, other: Place) -> Place:
        return self if self is other else Place.ANY


class OKind(enum.Enum):
    """How an origin made its tensors, which decides how the port can move them."""

    FACTORY = "factory"  # torch.zeros(...), torch.randn(...): can take device=
    DATA = "data"  # torch.tensor(x), torch.from_numpy(a): made from host data
    BATCH = "batch"  # a batch bound to a name by a loop or next(): moved where it is bound
    MOVE = "move"  # an explicit .to()/.cuda()/.cpu() of the program
    MODEL = "model"  # a module constructed by the program
    STATE = "state"  # parameters, buffers and submodules of a class's instances
    PARAM = "param"  # a parameter of a function no analysed code calls
    RESULT = "result"  # what an unknown call returned
    LOAD = "load"  # torch.load(...)
    GENERATOR = "generator"  # torch.Generator(...)


@dataclass(eq=False)
class Origin:
    """A site where tensors (or a module) are made; compared by identity."""

    kind: OKind
    node: ast.AST
    unit: Unit
    func: FuncInfo | None
    written: Place  # where the program as written puts them
    label: str  # "torch.zeros at train.py:12", for messages
    cls: ClassInfo | None = None  # MODEL: the class built; STATE: the owning class
    name: str | None = None  # BATCH/PARAM: the name bound
    parent: Origin | None = None  # MODEL nested in another module (Sequential(Linear()))
    requires_grad: bool = False  # a leaf the program trains: never move it with .to()
    follows: frozenset[Origin] | None = None  # MOVE to a value's device: where that value is
    run: int = 0  # the interpretation that last made it (state from older runs is reset)
    dtype: str | None = None  # DATA: the dtype of the host data it was made from

    def __repr__(self) -> str:
        return f"<{self.kind.value} {self.label}>"


Origins = frozenset[Origin]
NO_ORIGINS: Origins = frozenset()


@dataclass(frozen=True, eq=False)
class Val:
    """An abstract value; see the module docstring."""

    kind: Kind
    origins: Origins = NO_ORIGINS
    parts: tuple[Val, ...] | None = None  # a tuple or list display: its positions
    item: Val | None = None  # SEQ element, LOADER batch, DATASET item, DIST sample
    fields: tuple[tuple[str, Val], ...] | None = None  # a dict with string keys
    ref: FuncInfo | ClassInfo | None = None  # FUNC/CLASS/OBJECT/MODULE of the program
    qual: str | None = None  # QUAL: the dotted name; MODULE/OPTIMIZER...: the torch class
    scalar: bool = False  # a 0-dim tensor (allowed to meet tensors on any device)
    dtype: str | None = None
    bound: Val | None = None  # FUNC: the receiver of a bound method
    loss: bool = False  # MODULE: a loss (no weights: its output lives where its inputs do)
    _key: tuple[object, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def tensorish(self) -> bool:
        """A tensor, or something of unknown kind that carries tensors."""
        return self.kind is Kind.TENSOR or (self.kind is Kind.UNKNOWN and bool(self.origins))

    def with_origins(self, origins: Iterable[Origin]) -> Val:
        return replace(self, origins=frozenset(origins), _key=None)

    def key(self, depth: int = 4) -> tuple[object, ...]:
        """A hashable summary, to tell whether a join changed anything."""
        if self._key is not None and depth == 4:
            return self._key
        sub: tuple[object, ...] = ()
        if depth > 0:
            parts = tuple(p.key(depth - 1) for p in self.parts) if self.parts is not None else None
            fields = (
                tuple((k, v.key(depth - 1)) for k, v in self.fields)
                if self.fields is not None
                else None
            )
            sub = (parts, self.item.key(depth - 1) if self.item else None, fields)
        ids = frozenset(id(o) for o in self.origins)
        out = (self.kind, ids, sub, id(self.ref), self.qual, self.scalar, self.dtype, self.loss)
        if depth == 4:
            object.__setattr__(self, "_key", out)
        return out


UNKNOWN = Val(Kind.UNKNOWN)
HOST = Val(Kind.HOST)
NONE = Val(Kind.NONE)


def tensor(origins: Iterable[Origin], *, scalar: bool = False, dtype: str | None = None) -> Val:
    return Val(Kind.TENSOR, frozenset(origins), scalar=scalar, dtype=dtype)


def seq(item: Val | None, parts: tuple[Val, ...] | None = None) -> Val:
    return Val(Kind.SEQ, item=item, parts=parts)


class Elements(TypedDict):
    parts: tuple[Val, ...] | None
    fields: tuple[tuple[str, Val], ...] | None
    item: Val | None


def map_elements(value: Val, fn: Callable[[Val], Val]) -> Elements:
    """A container's parts, fields and item, each through ``fn`` (for ``Val(Kind.SEQ, **...)``
    or ``replace(value, **...)``)."""
    return Elements(
        parts=tuple(fn(p) for p in value.parts) if value.parts is not None else None,
        fields=tuple((k, fn(v)) for k, v in value.fields) if value.fields is not None else None,
        item=fn(value.item) if value.item is not None else None,
    )


def all_origins(val: Val | None, depth: int = 5) -> set[Origin]:
    """Every origin of ``val`` and of the values it contains."""
    if val is None:
        return set()
    out = set(val.origins)
    if depth <= 0:
        return out
    for part in val.parts or ():
        out |= all_origins(part, depth - 1)
    if val.item is not None:
        out |= all_origins(val.item, depth - 1)
    for _, sub in val.fields or ():
        out |= all_origins(sub, depth - 1)
    return out


def element(val: Val) -> Val:
    """What iterating ``val`` gives, one element at a time."""
    if val.kind is Kind.SEQ:
        if val.item is not None:
            return val.item
        if val.parts:
            return join_all(val.parts)
        return UNKNOWN
    if val.kind in (Kind.LOADER, Kind.DATASET):
        return val.item or UNKNOWN
    if val.kind is Kind.TENSOR:
        return val  # rows of a tensor live where the tensor does
    if val.kind is Kind.NDARRAY:
        return val
    if val.kind is Kind.MODULE:  # iterating nn.Sequential/ModuleList gives its modules
        return val.item if val.item is not None else Val(Kind.MODULE, val.origins)
    if val.kind is Kind.UNKNOWN and val.item is not None:
        return val.item
    if val.kind is Kind.UNKNOWN and val.origins:
        return val
    return UNKNOWN


def unpack(val: Val, count: int) -> list[Val]:
    """The values bound by ``a, b, ... = val`` (``count`` targets)."""
    if val.parts is not None and len(val.parts) == count:
        return list(val.parts)
    if val.kind is Kind.SEQ and val.fields is not None and len(val.fields) == count:
        return [HOST] * count  # unpacking a dict gives its keys
    inner = element(val)
    return [inner] * count


def _join_tuples(a: tuple[Val, ...] | None, b: tuple[Val, ...] | None) -> tuple[Val, ...] | None:
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(join(x, y) for x, y in zip(a, b, strict=True))


def _join_fields(
    a: tuple[tuple[str, Val], ...] | None, b: tuple[tuple[str, Val], ...] | None
) -> tuple[tuple[str, Val], ...] | None:
    if a is None or b is None:
        return a if b is None else b
    merged = dict(a)
    for name, value in b:
        merged[name] = join(merged[name], value) if name in merged else value
    return tuple(merged.items())


def _opt_join(a: Val | None, b: Val | None) -> Val | None:
    if a is None or b is None:
        return a if b is None else b
    return join(a, b)


def join(a: Val, b: Val) -> Val:
    """The least value that covers both (``x = a if c else b``, or two branches)."""
    if a is b:
        return a
    if a.kind is Kind.NONE:
        return b
    if b.kind is Kind.NONE:
        return a
    origins = a.origins | b.origins
    if a.kind is b.kind:
        return Val(
            a.kind,
            origins,
            parts=_join_tuples(a.parts, b.parts),
            item=_opt_join(a.item, b.item),
            fields=_join_fields(a.fields, b.fields),
            ref=a.ref if a.ref is b.ref else None,
            qual=a.qual if a.qual == b.qual else None,
            scalar=a.scalar and b.scalar,
            dtype=a.dtype if a.dtype == b.dtype else None,
            bound=a.bound if a.bound is b.bound else None,
            loss=a.loss and b.loss,
        )
    kinds = {a.kind, b.kind}
    if kinds == {Kind.HOST, Kind.TENSOR}:
        # `total = 0` then `total += loss`: a running sum that becomes a tensor; but not
        # `t = torch.tensor([t])` for a number given: a vector of one, refused beside the GPU's
        tensor_side = a if a.kind is Kind.TENSOR else b
        scalar = not any(_made_from_a_list(o) for o in tensor_side.origins)
        return replace(tensor_side, origins=origins, scalar=scalar, _key=None)
    return Val(Kind.UNKNOWN, origins, item=_opt_join(a.item, b.item))


def _made_from_a_list(origin: Origin) -> bool:
    """``torch.tensor([x])``: data given as a list or tuple (at least one dimension)."""
    node = origin.node
    return (
        origin.kind is OKind.DATA
        and isinstance(node, ast.Call)
        and bool(node.args)
        and isinstance(node.args[0], ast.List | ast.Tuple)
    )


def join_all(values: Iterable[Val]) -> Val:
    out: Val | None = None
    for value in values:
        out = value if out is None else join(out, value)
    return out if out is not None else UNKNOWN
