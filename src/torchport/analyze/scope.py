"""What each name of one function (or the module) holds, from its bindings in line order."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass

from torchport.analyze import kinds as K
from torchport.analyze.context import FileContext, Func, binding_sites
from torchport.analyze.kinds import Info
from torchport.analyze.walk import descendants

Thunk = Callable[[], "Info | None"]


@dataclass(eq=False)  # records: compared by identity
class _Binding:
    """One assignment of a name, evaluated when first asked for."""

    line: int
    thunk: Thunk
    done: bool = False  # evaluated once: chains like ``x = x + x`` stay linear
    value: Info | None = None


class Scope:
    """Assignments of one function (or the module), evaluated lazily and in line order."""

    def __init__(self, ctx: FileContext, owner: ast.AST) -> None:
        self.ctx, self.owner = ctx, owner
        self.cls = ctx.class_of(owner) if owner is not ctx.tree else None
        self.bindings: dict[str, list[_Binding]] = {}
        self._busy: set[tuple[str, int]] = set()
        if isinstance(owner, ast.FunctionDef | ast.AsyncFunctionDef):
            self._bind_arguments(owner)
        for node in binding_sites(owner):
            self._collect(node)
        for found in self.bindings.values():
            found.sort(key=lambda b: b.line)

    def _bind(self, name: str, line: int, thunk: Thunk) -> None:
        self.bindings.setdefault(name, []).append(_Binding(line, thunk))

    def _bind_arguments(self, func: Func) -> None:
        args = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
        for arg in args:
            # every parameter is bound, unknown unless annotated: it shadows a global of the
            # same name (a module-level `labels` on the CPU is not the `labels` passed in)
            if arg.annotation is not None:
                info = K.from_annotation(self.ctx.qualname(arg.annotation))
                self._bind(arg.arg, func.lineno, lambda i=info: i)  # type: ignore[misc]
            else:  # what the file's calls of this function hand it (see FileContext.argument)
                given = functools.partial(self.ctx.argument, func, arg.arg)
                self._bind(arg.arg, func.lineno, given)

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(target, node.value, node.lineno)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            ann = K.from_annotation(self.ctx.qualname(node.annotation))
            value = node.value
            if ann is not None or value is None:
                self._bind(node.target.id, node.lineno, lambda a=ann: a)  # type: ignore[misc]
            else:
                self._bind_target(node.target, value, node.lineno)
        elif isinstance(node, ast.For | ast.AsyncFor):
            self._bind_loop(node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self._bind_in_place(node.value, node.lineno)
        elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
            self._bind(node.optional_vars.id, node.context_expr.lineno, lambda: None)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self._bind_target(node.target, ast.BinOp(node.target, node.op, node.value), node.lineno)

    def _bind_target(self, target: ast.expr, value: ast.expr, line: int) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, line, lambda: self.infer(value, line))
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._bind_target(t, v, line)
            else:
                for name in _names(target):
                    self._bind(name, line, lambda: None)

    def _bind_loop(self, node: ast.For | ast.AsyncFor) -> None:
        line, source = node.lineno, loader_of(node.iter)
        target = node.target
        enumerated = source is not None and getattr(source.func, "id", "") == "enumerate"
        # enumerate(loader): the batch is the second element
        if enumerated and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            for name in _names(target.elts[0]):
                self._bind(name, line, lambda: None)
            target = target.elts[1]
        iterable = source.args[0] if source is not None else node.iter

        def batch() -> Info | None:
            loader = self.infer(iterable, line)
            if loader is None and _passed_loader(iterable, self.owner):
                # `def train(model, loader)`: tensors, on a device nobody can tell here (the
                # loader may be a prefetcher that moves them)
                return Info(K.TENSOR)
            if loader is None or loader.kind != K.LOADER:
                return None
            return Info(
                K.TENSOR,
                device="cpu",
                batch=True,
                origin=f"a batch from `{_src(iterable, self.ctx)}`, line {line}",
            )

        for name in _names(target):
            self._bind(name, line, batch)

    def _bind_in_place(self, call: ast.Call, line: int) -> None:
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in K.MODULE_IN_PLACE
            and isinstance(func.value, ast.Name)
        ):
            name = func.value.id

            def moved() -> Info | None:
                after = self.infer(call, line)
                if after is not None and after.kind == K.MODULE:
                    return after
                before = self.lookup(name, line)
                if before is None and func.attr in ("to", "cuda"):
                    # `model.to(device)` as a statement of an unknown name: only a module
                    # moves in place, so that is what the author takes it to be.
                    from torchport.analyze.infer import moved as move

                    return move(self, call, Info(K.MODULE), func.attr, line)
                return before

            self._bind(name, line, moved)

    def lookup(self, name: str, line: int) -> Info | None:
        """The value of ``name`` just before ``line`` (last binding above it wins)."""
        found = self.bindings.get(name)
        if not found:
            if self.owner is not self.ctx.tree:
                return self.ctx.scope(self.ctx.tree).lookup(name, 10**9)
            return None
        before = [b for b in found if b.line < line] or (
            [] if self.owner is not self.ctx.tree else found
        )
        if not before:
            return None
        binding = before[-1]
        if binding.done:
            return binding.value
        key = (name, binding.line)
        if key in self._busy:
            return None
        self._busy.add(key)
        try:
            binding.value = binding.thunk()
            binding.done = True
            return binding.value
        finally:
            self._busy.discard(key)

    def infer(self, expr: ast.expr, line: int) -> Info | None:
        from torchport.analyze.infer import infer

        return infer(self, expr, line)


def _names(target: ast.expr) -> list[str]:
    return [n.id for n in descendants(target) if isinstance(n, ast.Name)]


def _src(node: ast.AST, ctx: FileContext) -> str:
    return ctx.text(node) or "the loader"


def loader_of(it: ast.expr) -> ast.Call | None:
    """``enumerate(x)``/``tqdm(x)`` wrappers around an iterable, as the wrapping call."""
    if isinstance(it, ast.Call) and it.args:
        name = it.func.id if isinstance(it.func, ast.Name) else getattr(it.func, "attr", "")
        if name in ("enumerate", "tqdm", "iter"):
            return it
    return None


def _passed_loader(iterable: ast.expr, owner: ast.AST) -> bool:
    """Whether ``iterable`` is a parameter of ``owner`` named as a loader (``train_loader``)."""
    if not (isinstance(iterable, ast.Name) and iterable.id.lower().endswith("loader")):
        return False
    if not isinstance(owner, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    params = [*owner.args.posonlyargs, *owner.args.args, *owner.args.kwonlyargs]
    return any(p.arg == iterable.id and p.annotation is None for p in params)
