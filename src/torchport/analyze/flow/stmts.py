"""Statements: bindings, branches joined, loop bodies twice, attribute stores recorded."""

from __future__ import annotations

import ast
from dataclasses import replace

from torchport.analyze.flow.events import AttrStore
from torchport.analyze.flow.exprs import OPS, binop, evaluate
from torchport.analyze.flow.interp import Frame, Interp
from torchport.analyze.flow.values import (
    HOST,
    NONE,
    UNKNOWN,
    Kind,
    OKind,
    Origin,
    Place,
    Val,
    all_origins,
    element,
    join,
    seq,
    unpack,
)

_TRY_STAR = getattr(ast, "TryStar", ast.Try)


def exec_block(ip: Interp, fr: Frame, body: list[ast.stmt]) -> None:
    for stmt in body:
        if fr.stopped:
            return
        exec_stmt(ip, fr, stmt)


def _branch(ip: Interp, fr: Frame, body: list[ast.stmt]) -> tuple[dict[str, Val], bool]:
    """Run ``body`` on a copy of the frame's names; its names after, and whether it stopped."""
    saved, stopped = fr.env, fr.stopped
    fr.env = dict(saved)
    try:
        exec_block(ip, fr, body)
        return fr.env, fr.stopped
    finally:
        fr.env, fr.stopped = saved, stopped


def _merge(fr: Frame, outcomes: list[tuple[dict[str, Val], bool]]) -> None:
    """The names after one of several branches ran (a branch that returned does not count)."""
    live = [env for env, stopped in outcomes if not stopped]
    if not live:
        fr.stopped = True
        return
    names = set().union(*live)
    for name in names:
        values = [env[name] for env in live if name in env]
        merged = values[0]
        for value in values[1:]:
            merged = join(merged, value)
        if name in fr.env and len(values) < len(live):
            merged = join(fr.env[name], merged)
        fr.env[name] = merged


def exec_stmt(ip: Interp, fr: Frame, stmt: ast.stmt) -> None:
    if isinstance(stmt, ast.Expr):
        evaluate(ip, fr, stmt.value)
    elif isinstance(stmt, ast.Assign):
        value = evaluate(ip, fr, stmt.value)
        for target in stmt.targets:
            bind(ip, fr, target, value, stmt)
    elif isinstance(stmt, ast.AnnAssign):
        if stmt.value is not None:
            bind(ip, fr, stmt.target, evaluate(ip, fr, stmt.value), stmt)
    elif isinstance(stmt, ast.AugAssign):
        _aug_assign(ip, fr, stmt)
    elif isinstance(stmt, ast.Return):
        fr.returns.append(evaluate(ip, fr, stmt.value) if stmt.value is not None else NONE)
        fr.stopped = True
    elif isinstance(stmt, ast.If):
        _if(ip, fr, stmt)
    elif isinstance(stmt, ast.For | ast.AsyncFor):
        _for(ip, fr, stmt)
    elif isinstance(stmt, ast.While):
        evaluate(ip, fr, stmt.test)
        _loop_body(ip, fr, stmt.body)
        exec_block(ip, fr, stmt.orelse)
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        for item in stmt.items:
            value = evaluate(ip, fr, item.context_expr)
            if item.optional_vars is not None:
                bind(ip, fr, item.optional_vars, _entered(value), stmt)
        exec_block(ip, fr, stmt.body)
    elif isinstance(stmt, ast.Try | _TRY_STAR):
        _try(ip, fr, stmt)
    elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        _define_function(ip, fr, stmt)
    elif isinstance(stmt, ast.ClassDef):
        _define_class(ip, fr, stmt)
    elif isinstance(stmt, ast.Raise):
        if stmt.exc is not None:
            evaluate(ip, fr, stmt.exc)
        fr.stopped = True
    elif isinstance(stmt, ast.Assert):
        evaluate(ip, fr, stmt.test)
    elif isinstance(stmt, ast.Delete):
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                fr.env.pop(target.id, None)
    elif isinstance(stmt, ast.Match):
        evaluate(ip, fr, stmt.subject)
        _merge(fr, [_branch(ip, fr, case.body) for case in stmt.cases] + [(dict(fr.env), False)])


def _if(ip: Interp, fr: Frame, stmt: ast.If) -> None:
    evaluate(ip, fr, stmt.test)
    narrowed = _narrowed(ip, fr, stmt.test)
    saved = dict(fr.env)
    if narrowed is not None:
        fr.env[narrowed[0]] = narrowed[1]
    taken = _branch(ip, fr, stmt.body)
    fr.env = saved
    _merge(fr, [taken, _branch(ip, fr, stmt.orelse)])


def _narrowed(ip: Interp, fr: Frame, test: ast.expr) -> tuple[str, Val] | None:
    """``if isinstance(x, torch.Tensor):``: in that branch ``x`` is a tensor (of what it held)."""
    if not (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
    ):
        return None
    if len(test.args) != 2 or not isinstance(test.args[0], ast.Name):
        return None
    if ip.qualname(fr.unit, test.args[1]) not in ("torch.Tensor", "torch.nn.Parameter"):
        return None
    name = test.args[0].id
    held = fr.lookup(name) or UNKNOWN
    if held.kind is Kind.TENSOR:
        return None
    return name, Val(Kind.TENSOR, frozenset(all_origins(held)))


def _entered(value: Val) -> Val:
    """What ``with X as name`` binds: X itself for most things, nothing known for others."""
    if value.kind in (Kind.HOST, Kind.QUAL, Kind.NONE):
        return UNKNOWN
    return value


def _loop_body(ip: Interp, fr: Frame, body: list[ast.stmt]) -> None:
    """Twice: the second pass sees what the first bound (values carried across iterations)."""
    for _ in range(2):
        env, stopped = _branch(ip, fr, body)
        if not stopped:
            _merge(fr, [(env, False), (dict(fr.env), False)])


def _for(ip: Interp, fr: Frame, stmt: ast.For | ast.AsyncFor) -> None:
    iterable = evaluate(ip, fr, stmt.iter)
    item = element(iterable)
    for _ in range(2):
        saved = fr.env
        fr.env = dict(saved)
        bind(ip, fr, stmt.target, item, stmt)
        exec_block(ip, fr, stmt.body)
        after, stopped = fr.env, fr.stopped
        fr.env, fr.stopped = saved, False
        if not stopped:
            _merge(fr, [(after, False), (dict(fr.env), False)])
    exec_block(ip, fr, stmt.orelse)


def _try(ip: Interp, fr: Frame, stmt: ast.Try) -> None:
    outcomes = [_branch(ip, fr, [*stmt.body, *stmt.orelse])]
    outcomes += [_branch(ip, fr, handler.body) for handler in stmt.handlers]
    _merge(fr, outcomes)
    was_stopped, fr.stopped = fr.stopped, False
    exec_block(ip, fr, stmt.finalbody)
    fr.stopped = fr.stopped or was_stopped


def _aug_assign(ip: Interp, fr: Frame, stmt: ast.AugAssign) -> None:
    current = (
        evaluate(ip, fr, stmt.target)
        if not isinstance(stmt.target, ast.Name)
        else (fr.lookup(stmt.target.id) or UNKNOWN)
    )
    value = evaluate(ip, fr, stmt.value)
    result = binop(ip, fr, stmt, (stmt.target, current), (stmt.value, value), op=stmt.op)
    if current.kind is Kind.TENSOR and value.tensorish:
        # a tensor's `+=` writes in place: a 0-dim accumulator must be where the value is (this
        # meeting replaces the one binop recorded for the same node)
        symbol = OPS.get(type(stmt.op), "")
        operands = [(stmt.target, current), (stmt.value, value)]
        ip.meet(fr, stmt, operands, f"`{symbol}=`", written=True)
        if current.scalar:
            result = current  # still the accumulator made where it was made, loop after loop
    if isinstance(stmt.target, ast.Name):
        fr.env[stmt.target.id] = result
        ip.events.values[id(stmt.target)] = result
    else:
        bind(ip, fr, stmt.target, result, stmt)


def bind(ip: Interp, fr: Frame, target: ast.expr, value: Val, stmt: ast.AST) -> None:
    """Bind ``target`` (a name, tuple, attribute or subscript) to ``value``."""
    if isinstance(target, ast.Name):
        value = rebatch(ip, fr, value, stmt, target.id)
        fr.env[target.id] = value
        ip.events.values[id(target)] = value
    elif isinstance(target, ast.Tuple | ast.List):
        starred = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
        if starred:
            inner = element(value)
            for elt in target.elts:
                sub = seq(inner) if isinstance(elt, ast.Starred) else inner
                bind(ip, fr, elt.value if isinstance(elt, ast.Starred) else elt, sub, stmt)
            return
        for elt, part in zip(target.elts, unpack(value, len(target.elts)), strict=True):
            bind(ip, fr, elt, part, stmt)
    elif isinstance(target, ast.Starred):
        bind(ip, fr, target.value, value, stmt)
    elif isinstance(target, ast.Attribute):
        _store_attribute(ip, fr, target, value, stmt)
    elif isinstance(target, ast.Subscript):
        _store_item(ip, fr, target, value, stmt)


def rebatch(ip: Interp, fr: Frame, value: Val, stmt: ast.AST, name: str) -> Val:
    """A batch taken from a loader gets an origin of its own where it is bound to ``name``."""
    if value.kind not in (Kind.TENSOR, Kind.UNKNOWN, Kind.SEQ):
        return value  # a loader or dataset holds batches; it is not one
    pending = [o for o in value.origins if o.kind is OKind.BATCH and o.name is None]
    nested = value.parts or value.item is not None or value.fields
    if not pending and not nested:
        return value
    return _rebatch(ip, fr, value, stmt, name, depth=4)


def _rebatch(ip: Interp, fr: Frame, value: Val, stmt: ast.AST, name: str, *, depth: int) -> Val:
    if isinstance(stmt, ast.comprehension):
        stmt = stmt.target  # `[step(x) for x in loader]`: the line of the name bound
    origins: set[Origin] = set()
    changed = False
    for o in value.origins:
        if o.kind is OKind.BATCH and o.name is None:
            made = ip.origin(
                OKind.BATCH,
                stmt,
                fr,
                o.written,
                f"`{name}`, a batch at {ip.where(fr.unit, stmt)}",
                name=name,
            )
            site = ip.events.loaders.get(id(o.node))
            if site is not None:
                site.batches.add(made)
            ip.events.sources.setdefault(made, set()).update(ip.events.sources.get(o, ()))
            origins.add(made)
            changed = True
        else:
            origins.add(o)
    if depth <= 0 or value.kind not in (Kind.TENSOR, Kind.UNKNOWN, Kind.SEQ):
        return value.with_origins(origins) if changed else value
    parts = value.parts
    if parts is not None:
        new_parts = tuple(_rebatch(ip, fr, p, stmt, name, depth=depth - 1) for p in parts)
        changed = changed or any(a is not b for a, b in zip(new_parts, parts, strict=True))
        parts = new_parts
    item = value.item
    if item is not None:
        new_item = _rebatch(ip, fr, item, stmt, name, depth=depth - 1)
        changed = changed or new_item is not item
        item = new_item
    fields = value.fields
    if fields is not None:
        new_fields = tuple((k, _rebatch(ip, fr, v, stmt, name, depth=depth - 1)) for k, v in fields)
        changed = changed or any(a[1] is not b[1] for a, b in zip(new_fields, fields, strict=True))
        fields = new_fields
    if not changed:
        return value
    return replace(
        value, origins=frozenset(origins), parts=parts, item=item, fields=fields, _key=None
    )


def _store_attribute(
    ip: Interp, fr: Frame, target: ast.Attribute, value: Val, stmt: ast.AST
) -> None:
    owner = evaluate(ip, fr, target.value)
    cls = owner.ref if owner.kind in (Kind.MODULE, Kind.OBJECT, Kind.DATASET) else None
    from torchport.analyze.flow.program import ClassInfo

    if isinstance(cls, ClassInfo):
        stored = value
        if cls.is_module and cls.state is not None:
            stored = _module_state(ip, cls, value)
        cls.attrs[target.attr] = (
            stored if target.attr not in cls.attrs else join(cls.attrs[target.attr], stored)
        )
        in_method = fr.func is not None and fr.func.cls is cls
        if in_method and isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            assert fr.func is not None
            store = AttrStore(cls, target.attr, stmt, stmt.value, fr.func, value)
            ip.events.stores[id(stmt)] = store
        if cls.is_dataset:
            ip.pin(fr, stmt, value, f"`{target.attr}` of the dataset `{cls.name}`")
    elif owner.kind is Kind.MODULE and value.kind is Kind.MODULE:
        # `model.fc = nn.Linear(...)`: the new layer moves with the model
        parent = next(iter(owner.origins), None)
        if parent is not None:
            for o in value.origins:
                if o.kind is OKind.MODEL and o.parent is None and o is not parent:
                    o.parent = parent


def _module_state(ip: Interp, cls: object, value: Val) -> Val:
    """What an attribute of a module holds: submodules and parameters move with the module."""
    from torchport.analyze.flow.program import ClassInfo

    assert isinstance(cls, ClassInfo) and cls.state is not None
    if value.kind is Kind.MODULE:
        for o in value.origins:
            if o.kind is OKind.MODEL and o.parent is None:
                o.parent = cls.state
        return value
    if value.kind is Kind.TENSOR and value.qual == "torch.nn.Parameter":
        if value.origins and all(o.written is Place.DEVICE for o in value.origins):
            return value  # made on the device (`torch.tensor(x, device=device)`): it is there
        return Val(Kind.TENSOR, frozenset([cls.state]), dtype=value.dtype)
    if value.kind is Kind.SEQ and value.item is not None and value.item.kind is Kind.MODULE:
        # a plain list of layers: the layers do NOT move with the module (the port wraps them)
        return value
    return value


def _store_item(ip: Interp, fr: Frame, target: ast.Subscript, value: Val, stmt: ast.AST) -> None:
    base = evaluate(ip, fr, target.value)
    index = evaluate(ip, fr, target.slice)
    if base.kind is Kind.TENSOR:
        if value.tensorish and not value.scalar:
            stored = getattr(stmt, "value", target)
            ip.meet(fr, stmt, [(target.value, base), (stored, value)], "an item assignment")
        if index.tensorish and not index.scalar:
            indexing = [(target.value, base), (target.slice, index)]
            ip.meet(fr, target, indexing, "indexing", index=True)
        return
    if base.kind is Kind.UNKNOWN and base.origins and isinstance(target.value, ast.Name):
        # `batch[key] = batch[key].to(device)`: the container now holds what was stored
        fr.env[target.value.id] = Val(Kind.UNKNOWN, base.origins | value.origins, item=base.item)
        return
    if base.kind is Kind.SEQ and isinstance(target.value, ast.Name):
        key = target.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and base.fields is not None:
            fields = dict(base.fields)
            fields[key.value] = join(fields[key.value], value) if key.value in fields else value
            updated = replace(base, fields=tuple(fields.items()), _key=None)
        else:
            updated = join(base, seq(value))
        fr.env[target.value.id] = updated


def _define_function(ip: Interp, fr: Frame, stmt: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    for decorator in stmt.decorator_list:
        evaluate(ip, fr, decorator)
    if (
        fr.func is None
        and stmt.name in fr.unit.functions
        and fr.unit.functions[stmt.name].node is stmt
    ):
        func = fr.unit.functions[stmt.name]
    else:
        func = ip.nested_func(stmt, fr)
    fr.env[stmt.name] = Val(Kind.FUNC, ref=func)


def _define_class(ip: Interp, fr: Frame, stmt: ast.ClassDef) -> None:
    cls = fr.unit.classes.get(stmt.name)
    if cls is None or cls.node is not stmt:
        fr.env[stmt.name] = UNKNOWN  # a class inside a function: not followed
        return
    fr.env[stmt.name] = Val(Kind.CLASS, ref=cls)
    body = Frame(fr.unit, None, {}, cls=cls)
    body.env = dict(fr.unit.globals)
    for item in stmt.body:
        if isinstance(item, ast.Assign):
            value = evaluate(ip, body, item.value)
            for target in item.targets:
                if isinstance(target, ast.Name):
                    cls.attrs[target.id] = value
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            cls.attrs[item.target.id] = evaluate(ip, body, item.value) if item.value else HOST
