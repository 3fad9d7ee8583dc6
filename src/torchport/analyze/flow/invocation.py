"""One call being interpreted: where it is and what its arguments are."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchport.analyze.flow.interp import Frame, Interp
from torchport.analyze.flow.values import OKind, Origin, Place, Val
from torchport.analyze.flow.vocab import device_operands

Arg = tuple[ast.expr, Val]


@dataclass(eq=False)  # records: compared by identity
class Invocation:
    """One call being interpreted: its frame and the values it was given."""

    ip: Interp
    fr: Frame
    node: ast.Call
    args: list[Arg]
    kwargs: dict[str, Arg]
    star: bool = False  # called with **kwargs: keywords we cannot see

    def arg(self, index: int, name: str | None = None) -> Arg | None:
        """The argument given by keyword ``name`` or at position ``index``."""
        if name is not None and name in self.kwargs:
            return self.kwargs[name]
        return self.args[index] if index < len(self.args) else None

    def value(self, index: int, name: str | None = None) -> Val | None:
        found = self.arg(index, name)
        return None if found is None else found[1]

    @property
    def everything(self) -> list[Arg]:
        return [*self.args, *self.kwargs.values()]

    def device_operands(self, callee: str | None) -> list[Arg]:
        """Every argument, less those ``callee`` accepts on the host (vocab.HOST_TOLERANT)."""
        return device_operands(callee, self.args, list(self.kwargs.items()))

    def tensors(self) -> list[Arg]:
        return [(e, v) for e, v in self.everything if v.tensorish]

    def text(self, node: ast.AST | None = None, limit: int = 40) -> str:
        found = self.fr.unit.ctx.text(node if node is not None else self.node)
        return found if len(found) <= limit else found[: limit - 3] + "..."

    def where(self) -> str:
        return self.ip.where(self.fr.unit, self.node)

    def origin(self, kind: OKind, written: Place, label: str, *, name: str | None = None) -> Origin:
        return self.ip.origin(kind, self.node, self.fr, written, label, name=name)

    def meet(
        self, operands: list[Arg], what: str, *, module: bool = False, written: bool = False
    ) -> None:
        self.ip.meet(self.fr, self.node, operands, what, module=module, written=written)

    def draw(self, tensors: list[Arg]) -> None:
        """Record a random draw when it names a generator (which must be where ``tensors`` are)."""
        from torchport.analyze.flow.events import Draw
        from torchport.analyze.flow.values import Kind

        generator = self.kwargs.get("generator")
        if generator is not None and generator[1].kind is Kind.GENERATOR and tensors:
            draw = Draw(self.node, self.fr.unit, self.fr.func, generator[1], tensors)
            self.ip.events.draws[id(self.node)] = draw

    def sink(self, argument: Arg, how: str, what: str) -> None:
        self.ip.sink(self.fr, argument[0], argument[1], how, what)

    def pin(self, argument: Arg, why: str) -> None:
        self.ip.pin(self.fr, argument[0], argument[1], why)

    def qualname(self, node: ast.expr) -> str | None:
        return self.ip.qualname(self.fr.unit, node)
