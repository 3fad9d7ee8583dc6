"""Static detectors of transfer and synchronization mistakes (TP2xx)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector, last_name
from torchport.analyze.checks.settings import setting_default
from torchport.analyze.context import walk_local
from torchport.analyze.edits import add_keyword, ensure_import, insert_at
from torchport.analyze.infer import device_of, has_star_kwargs, keyword
from torchport.analyze.walk import descendants
from torchport.findings import Finding, Fix, Safety, Severity
from torchport.rules import transfer as R


def _loaders(a: Analysis) -> Iterator[ast.Call]:
    for call in a.call_named("torch.utils.data.DataLoader"):
        if not has_star_kwargs(call):
            yield call


@detector(R.LoaderWithoutPinMemory)
def loader_without_pin_memory(a: Analysis) -> Iterator[Finding]:
    # batches moved where they are seen, or asynchronous copies (which only pinned memory
    # makes asynchronous) in a file that loads batches
    if not a.moves_batches and not _copies_non_blocking(a):
        return
    loaders = list(_loaders(a))
    for call in loaders:
        given = keyword(call, "pin_memory")
        if len(call.args) > 7:
            continue
        severity = Severity.WARNING if _copies_non_blocking(a) else None
        if given is not None:
            if (
                _refused(given)
                and severity
                and all(_refused(keyword(c, "pin_memory")) for c in loaders)
            ):
                # said outright, in a file that asks for asynchronous copies of batches and
                # has no loader that pins them (another may be a CPU-only one)
                yield R.LoaderWithoutPinMemory.finding(
                    "`pin_memory=False`, yet this file copies batches with "
                    "`non_blocking=True`: from pageable memory those copies are synchronous "
                    "and do not overlap with compute; pin the batches",
                    a.loc(given),
                    Fix("pass `pin_memory=torch.cuda.is_available()`"),
                    severity=severity,
                )
                continue
            # `pin_memory=cfg.pin_memory` whose only value is a default of False
            default = setting_default(a, given)
            if default is not None and default[0].value is False:
                yield R.LoaderWithoutPinMemory.finding(
                    f"`{a.text(given)}` is False (its default at line {default[1].lineno}, "
                    "never changed): the loader does not pin its batches, and this file "
                    "copies them to an accelerator; default it to `torch.cuda.is_available()`",
                    a.loc(given),
                    Fix("default the setting to `torch.cuda.is_available()`"),
                    severity=severity,
                    related=(a.loc(default[1]),),
                )
            continue
        torch, imports = ensure_import(a, "torch")
        edits = (*imports, add_keyword(a, call, f"pin_memory={torch}.cuda.is_available()"))
        yield R.LoaderWithoutPinMemory.finding(
            f"`{a.name(call)}` does not pin its batches, and this file copies them to an "
            "accelerator: pageable copies are slower and cannot overlap with compute; "
            "pass `pin_memory=True`",
            a.loc(call),
            Fix("pin batches: `pin_memory=torch.cuda.is_available()`", edits),
            severity=severity,
        )


def _refused(given: ast.expr | None) -> bool:
    """``pin_memory=False`` written out."""
    return isinstance(given, ast.Constant) and given.value is False


def _copies_non_blocking(a: Analysis) -> bool:
    """Whether the file asks for asynchronous copies to the device (``non_blocking=True``)."""
    if "non_blocking" not in a.source:
        return False
    return any(
        isinstance(value := keyword(call, "non_blocking"), ast.Constant)
        and value.value is True
        and (func.attr == "cuda" or _to_accelerator(a, call))
        for call, func in a.method_calls("to", "cuda")
    )


def _to_accelerator(a: Analysis, call: ast.Call) -> bool:
    target = keyword(call, "device") or (call.args[0] if call.args else None)
    return device_of(a.scope(call), target, call.lineno) == "accel"


@detector(R.LoaderWithoutWorkers)
def loader_without_workers(a: Analysis) -> Iterator[Finding]:
    if not a.moves_batches:
        return
    for call in _loaders(a):
        workers = keyword(call, "num_workers")
        default = setting_default(a, workers) if workers is not None else None
        if workers is not None and default is not None and _is_zero(default[0]):
            yield R.LoaderWithoutWorkers.finding(
                f"`{a.text(workers)}` is 0 (its default at line {default[1].lineno}, never "
                "changed): the loader loads batches on the training thread while the "
                "accelerator waits; default it to a few workers (e.g. 4)",
                a.loc(workers),
                Fix("default the setting to 4 workers, with `persistent_workers=True`"),
                related=(a.loc(default[1]),),
            )
            continue
        if len(call.args) > 5 or (workers is not None and not _is_zero(workers)):
            continue
        yield R.LoaderWithoutWorkers.finding(
            f"`{a.name(call)}` loads batches on the training thread (no `num_workers`) while "
            "the accelerator waits: set `num_workers` (e.g. 4) and `persistent_workers=True`",
            a.loc(workers or call),
            Fix("set `num_workers=4, persistent_workers=True`"),
        )


def _is_zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


def _is_tensor(a: Analysis, node: ast.expr) -> bool:
    info = a.info(node)
    return info is not None and info.kind == K.TENSOR


@detector(R.CopyWithoutNonBlocking)
def copy_without_non_blocking(a: Analysis) -> Iterator[Finding]:
    for call, info in a.device_moves:
        if not a.is_hot(call) or keyword(call, "non_blocking") is not None:
            continue
        if info is None or info.kind != K.TENSOR or not info.batch or info.device == "accel":
            continue
        if len(call.args) > 1 or has_star_kwargs(call):
            continue
        if isinstance(a.parents.get(call), ast.Expr):
            continue  # a discarded result is TP101's finding; the copy itself is moot
        assert isinstance(call.func, ast.Attribute)
        name = a.name(call.func.value)
        yield R.CopyWithoutNonBlocking.finding(
            f"`{a.name(call)}` copies `{name}` to the device in the hot loop and blocks until "
            "the copy is done: pass `non_blocking=True` (with a pinned-memory loader)",
            a.loc(call),
            Fix(
                "add `non_blocking=True`",
                (add_keyword(a, call, "non_blocking=True"),),
                Safety.UNSAFE,
            ),
        )


@detector(R.PinMemoryOnMainThread)
def pin_memory_on_main_thread(a: Analysis) -> Iterator[Finding]:
    for call, func in a.method_calls("pin_memory"):
        parent = a.parents.get(call)
        chained = isinstance(parent, ast.Attribute) and parent.attr in ("to", "cuda")
        if not (chained or (a.is_hot(call) and _is_tensor(a, func.value))):
            continue
        yield R.PinMemoryOnMainThread.finding(
            f"`{a.name(call)}` pins `{a.name(func.value)}` on the training thread, which can "
            "make the copy slower than a plain `.to()`: let the DataLoader pin "
            "(`pin_memory=True`) in its background thread",
            a.loc(call),
            Fix("drop `.pin_memory()` and pass `pin_memory=True` to the DataLoader"),
        )


@detector(R.NonBlockingHostReadBeforeSync)
def non_blocking_read_before_sync(a: Analysis) -> Iterator[Finding]:
    if "non_blocking" not in a.source:
        return
    copiers = _async_copiers(a)
    movers = _async_movers(a)
    for call in a.calls:
        copied = _async_host_copy(a, call, copiers, movers)
        if copied is None:
            continue
        stmt, name = copied
        read = _first_read_before_sync(a, stmt, name)
        if read is not None:
            yield R.NonBlockingHostReadBeforeSync.finding(
                f"`{name}` is copied to the host with `non_blocking=True` at line "
                f"{call.lineno} and read at line {read.lineno} before any synchronization: "
                "it may hold stale data; call `torch.cuda.synchronize()` (or an event's "
                "`synchronize()`) first",
                a.loc(read),
                Fix("synchronize before reading it"),
                # the copy itself, and for a generic mover the copy line inside it
                related=tuple(a.loc(c) for c in [call, _moved_to_host_by(call, movers)] if c),
            )


def _async_host_copy(
    a: Analysis, call: ast.Call, copiers: set[str], movers: dict[str, tuple[int, ast.Call]]
) -> tuple[ast.stmt, str] | None:
    """``y = x.to("cpu", non_blocking=True)``, ``host.copy_(x, non_blocking=True)``,
    ``y = self.to_host(x)`` where ``to_host`` is one of ``copiers`` (see _async_copiers), or
    ``y = move(batch, "cpu")`` where ``move`` is one of ``movers`` (see _async_movers).

    Returns the statement and the name of the host tensor that receives the copy.
    """
    if (
        not _is_async_host_copy(a, call)
        and last_name(call.func) not in copiers
        and _moved_to_host_by(call, movers) is None
    ):
        return None
    func = call.func
    stmt = a.parents.get(call)
    if isinstance(func, ast.Attribute) and func.attr == "copy_":
        host = a.info(func.value)
        on_host = host is not None and host.kind == K.TENSOR and host.device == "cpu"
        if isinstance(stmt, ast.Expr) and isinstance(func.value, ast.Name) and on_host:
            return stmt, func.value.id
        return None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target_name = stmt.targets[0]
        if isinstance(target_name, ast.Name):
            return stmt, target_name.id
    # ``preds.append(x.to("cpu", non_blocking=True))``: the list holds the copy
    if isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Attribute):
        holder, statement = stmt.func.value, a.parents.get(stmt)
        collects = stmt.func.attr in ("append", "extend") and isinstance(holder, ast.Name)
        if collects and isinstance(statement, ast.Expr):
            assert isinstance(holder, ast.Name)
            return statement, holder.id
    return None


def _is_async_host_copy(a: Analysis, call: ast.Call) -> bool:
    """``x.to("cpu", non_blocking=True)``, ``x.cpu(non_blocking=True)``, ``h.copy_(x, ...)``."""
    func = call.func
    flag = keyword(call, "non_blocking")
    if not isinstance(func, ast.Attribute) or not (
        isinstance(flag, ast.Constant) and flag.value is True
    ):
        return False
    if func.attr == "to":
        target = keyword(call, "device") or (call.args[0] if call.args else None)
        return device_of(a.scope(call), target, call.lineno) == "cpu"
    return func.attr in ("cpu", "copy_")


def _async_copiers(a: Analysis) -> set[str]:
    """The same-file functions and methods that return such a copy and nothing else
    (``def to_host(self, ids): return ids.to("cpu", non_blocking=True)``), by name."""
    out: set[str] = set()
    for ret in a.of_type(ast.Return):
        assert isinstance(ret, ast.Return)
        value = ret.value
        if not (isinstance(value, ast.Call) and keyword(value, "non_blocking") is not None):
            continue  # the cheap test first: most returns are not copies
        func = a.function_of(ret)
        if func is None or func.name in out or not _is_async_host_copy(a, value):
            continue
        returns = [n for n in walk_local(func) if isinstance(n, ast.Return)]
        if all(isinstance(r.value, ast.Call) and _is_async_host_copy(a, r.value) for r in returns):
            out.add(func.name)
    return out


def _async_movers(a: Analysis) -> dict[str, tuple[int, ast.Call]]:
    """Same-file functions that move what they are given to a device they are given, always
    with ``non_blocking=True`` (``def move_data_to_device(data, device)``), by name, with the
    position of the device parameter and the copy: called with ``"cpu"`` they make async host
    copies."""
    out: dict[str, tuple[int, ast.Call]] = {}
    for call, _ in a.method_calls("to"):
        flag = keyword(call, "non_blocking")
        if not (isinstance(flag, ast.Constant) and flag.value is True):
            continue
        target = keyword(call, "device") or (call.args[0] if call.args else None)
        func = a.function_of(call)
        if func is None or not isinstance(target, ast.Name):
            continue
        params = [p.arg for p in func.args.args]
        if target.id in params:
            out[func.name] = (params.index(target.id), call)
    return out


def _moved_to_host_by(call: ast.Call, movers: dict[str, tuple[int, ast.Call]]) -> ast.Call | None:
    """The copy in the helper when ``call`` is ``move_data_to_device(batch, "cpu")`` with one
    of ``movers``."""
    func = call.func
    if not isinstance(func, ast.Name) or func.id not in movers:
        return None
    index, copy = movers[func.id]
    given = call.args[index] if index < len(call.args) else None
    return copy if isinstance(given, ast.Constant) and given.value == "cpu" else None


def _first_read_before_sync(a: Analysis, stmt: ast.stmt, name: str) -> ast.Name | None:
    """The first read of ``name`` in the statements that follow ``stmt`` in its own block,
    then (out of a loop or a ``with``: copies collected batch after batch) in the block after
    it. Handing the copy to a list (``preds.append(copy)``) reads nothing: the list is
    followed from there.

    Only the straight-line rest of a block is followed: a read in another branch (an
    ``elif``) never runs after the copy, and silence beats a guess.
    """
    while True:
        found, decided = _read_in_rest_of_block(a, stmt, name)
        holder = _collected_into(a, found)
        if holder is not None and found is not None:
            stmt, name = _statement_of(a, found), holder
            continue
        parent = a.parents.get(stmt)
        if decided or not isinstance(parent, ast.For | ast.While | ast.With):
            return found
        stmt = parent


def _collected_into(a: Analysis, read: ast.Name | None) -> str | None:
    """``holder`` when ``read`` is the argument of ``holder.append(read)`` (or ``extend``),
    alone or in a tuple or list (``pending.append((preds, labels))``)."""
    call = a.parents.get(read) if read is not None else None
    while isinstance(call, ast.Tuple | ast.List):
        call = a.parents.get(call)
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return None
    holder = call.func.value
    if call.func.attr in ("append", "extend") and isinstance(holder, ast.Name):
        return holder.id
    return None


def _statement_of(a: Analysis, node: ast.AST) -> ast.stmt:
    while not isinstance(node, ast.stmt):
        node = a.parents[node]
    return node


def _read_in_rest_of_block(a: Analysis, stmt: ast.stmt, name: str) -> tuple[ast.Name | None, bool]:
    """The first read of ``name`` after ``stmt`` in its block (None if a sync or a new value
    comes first), and whether the block decided it (a read, a sync or an assignment seen)."""
    parent = a.parents.get(stmt)
    blocks = (getattr(parent, name, []) for name in ("body", "orelse", "finalbody"))
    body: list[ast.stmt] = next((b for b in blocks if stmt in b), [])
    for following in body[body.index(stmt) + 1 :] if body else []:
        events: list[tuple[int, int, ast.expr]] = []
        for node in descendants(following):
            is_read = isinstance(node, ast.Name) and node.id == name
            is_sync = isinstance(node, ast.Call) and getattr(node.func, "attr", "") in _SYNCS
            if is_read or is_sync:
                assert isinstance(node, ast.expr)
                events.append((node.lineno, node.col_offset, node))
        for _, _, node in sorted(events, key=lambda e: (e[0], e[1])):
            if isinstance(node, ast.Call):
                return None, True
            assert isinstance(node, ast.Name)
            return (node if isinstance(node.ctx, ast.Load) else None), True
    return None, False


_SYNCS = ("synchronize", "wait", "wait_stream", "wait_event")


@detector(R.LossAccumulatedAsTensor)
def loss_accumulated_as_tensor(a: Analysis) -> Iterator[Finding]:
    for node in a.hot:
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            value, kept_by = node.value, f"`{a.name(node.target)} += {a.name(node.value)}`"
            holder, verb = a.name(node.target), "add"
        elif _appends(node):
            assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            value, kept_by = node.args[0], f"`{a.name(node)}`"
            holder, verb = a.name(node.func.value), "append"
        else:
            continue
        value = _scaled_term(value) if verb == "add" else value
        if not isinstance(value, ast.Name) or not _is_loss(a, value):
            continue
        if verb == "append" and not _backward_on(a, value):
            continue  # a list of losses stacked for one backward later keeps graphs on purpose
        yield R.LossAccumulatedAsTensor.finding(
            f"{kept_by} keeps every step's autograd graph alive through `{holder}`: "
            f"{verb} `{value.id}.detach()` instead",
            a.loc(node),
            Fix(
                f"{verb} `{value.id}.detach()`",
                (insert_at(a.end(value), ".detach()"),),
                Safety.UNSAFE,
            ),
        )


def _scaled_term(value: ast.expr) -> ast.expr:
    """The tensor of ``loss / len(loader)`` or ``loss * x.size(0)`` (what a running mean adds:
    the product keeps the graph as the loss itself does), else ``value``."""
    while isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult | ast.Div):
        value = value.left
    return value


def _appends(node: ast.AST) -> bool:
    """``history.append(x)``: a list that outlives the step."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "append"
        and len(node.args) == 1
        and not node.keywords
    )


def _is_loss(a: Analysis, name: ast.Name) -> bool:
    """A name ``.backward()`` is called on (only tensors have it, whatever inference knows of
    ``-model.log_likelihood(x).mean()``), or the output of a ``*Loss`` module."""
    if _backward_on(a, name):
        return True
    info = a.info(name)
    return info is not None and info.kind == K.TENSOR and (info.cls or "").endswith("Loss")


def _backward_on(a: Analysis, name: ast.Name) -> bool:
    """``name.backward()`` (or ``scaler.scale(name).backward()``) in ``name``'s function."""
    owner = a.function_of(name) or a.tree
    for call, func in a.method_calls("backward"):
        if (a.function_of(call) or a.tree) is not owner:
            continue
        target = func.value
        if isinstance(target, ast.Call) and target.args:
            target = target.args[0]
        if isinstance(target, ast.Name) and target.id == name.id:
            return True
    return False
