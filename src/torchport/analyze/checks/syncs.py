"""Static detectors of host-device synchronizations in the hot loop (TP204-TP207), and of the
one that timing needs and lacks (TP211).

A sync that runs once, or once every N steps (``if step % log_every == 0:``), is what we tell
users to do; only syncs that run at every step are reported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector, last_name
from torchport.analyze.checks.values import assigned_value
from torchport.analyze.context import is_self_attr, walk_local
from torchport.analyze.hot import looks_like_model_call, rarely_runs
from torchport.findings import Finding, Fix, Severity
from torchport.rules import transfer as R


def _maybe_on_device(a: Analysis, node: ast.expr) -> bool:
    info = a.info(node)
    if info is not None and info.kind == K.TENSOR and info.device == "cpu" and not info.origin:
        # "on the CPU" with no creation in sight (a layer's output, as far as this function
        # sees its module): where it runs is what the placement analysis followed
        return a.placed_on_device(node)
    if info is not None:
        return info.kind == K.TENSOR and info.device != "cpu"
    return a.placed_on_device(node)  # what this file's functions are handed, followed


def _every_step(a: Analysis, node: ast.AST) -> bool:
    return a.is_hot(node) and not rarely_runs(a, node)


_INNER_LOOPS = (
    ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp
)  # fmt: skip


def _per_step(a: Analysis, node: ast.AST) -> Severity | None:
    """A warning where the sync sits in a loop inside the step (it waits many times a step);
    otherwise the rule's own severity (a suggestion: one wait a step)."""
    for up in a.ancestors(node):
        if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return None
        if isinstance(up, _INNER_LOOPS) and a.is_hot(up):
            return Severity.WARNING
    return None


@detector(R.ItemInHotLoop)
def item_in_hot_loop(a: Analysis) -> Iterator[Finding]:
    for call, func in a.method_calls("item", "tolist"):
        if call.args or not _every_step(a, call) or not _maybe_on_device(a, func.value):
            continue
        yield R.ItemInHotLoop.finding(
            f"`{a.name(call)}` in the hot loop waits for the GPU at every step: accumulate on "
            "the device (`.detach()`) and read the value once per epoch or every N steps",
            a.loc(call),
            Fix("keep it on the device and read it less often"),
            severity=_per_step(a, call),
        )
    yield from _scale_reads(a)


def _scale_reads(a: Analysis) -> Iterator[Finding]:
    """``scaler.get_scale()`` at every step: it reads the scale with ``.item()``."""
    if "get_scale" not in a.source or not a.makes_scaler:
        return
    for call, func in a.method_calls("get_scale"):
        if call.args or not _every_step(a, call) or not _is_scaler(a, func.value):
            continue
        yield R.ItemInHotLoop.finding(
            f"`{a.name(call)}` reads the loss scale with `.item()` at every step, waiting for "
            "the GPU: read it every N steps (a skipped step still shows there, as a smaller "
            "scale)",
            a.loc(call),
            Fix("read the scale every N steps, or once at the end"),
            severity=_per_step(a, call),
        )


def _is_scaler(a: Analysis, receiver: ast.expr) -> bool:
    """A GradScaler: what the file made with `torch.amp.GradScaler`, or a name for one."""
    info = a.info(receiver)
    if info is not None:
        return info.kind == K.SCALER
    name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
    return "scaler" in name.lower()


@detector(R.DeviceToHostInHotLoop)
def device_to_host_in_hot_loop(a: Analysis) -> Iterator[Finding]:
    for call, func in a.method_calls("cpu", "numpy"):
        if call.args or not _every_step(a, call) or not _copies_from_device(a, call, func.value):
            continue
        yield R.DeviceToHostInHotLoop.finding(
            f"`{a.name(call)}` in the hot loop copies to the host and synchronizes at every "
            "step: keep results on the device and copy once after the loop",
            a.loc(call),
            Fix("collect on the device; copy after the loop"),
            severity=_per_step(a, call),
        )


def _copies_from_device(a: Analysis, call: ast.Call, value: ast.expr) -> bool:
    """A tensor inferred here and not on the CPU, or, inside a model's forward pass, a value
    followed there from the device (a rollout's host copy for the environment is not)."""
    info = a.info(value)
    if info is not None:
        return info.kind == K.TENSOR and info.device != "cpu"
    return call in a.forward and a.placed_on_device(value)


_COERCE = ("float", "int", "bool", "print", "range")


@detector(R.ImplicitSyncInHotLoop)
def implicit_sync_in_hot_loop(a: Analysis) -> Iterator[Finding]:
    for call in a.calls:
        func = call.func
        if not (isinstance(func, ast.Name) and func.id in _COERCE and func.id not in a.imports):
            continue
        if not call.args or not _every_step(a, call):
            continue
        for arg in call.args:
            if _maybe_on_device(a, arg):
                yield _sync(a, call, f"`{func.id}({a.name(arg)})`")
                break
    for call in a.calls:
        tensor = _sized_by_values(a, call)
        if tensor is not None and _every_step(a, call) and _maybe_on_device(a, tensor):
            yield _sync(a, call, f"`{a.name(call)}`, whose size depends on the values,")
    masked: list[tuple[int, int, ast.Subscript, ast.expr]] = []
    for node in a.hot:
        if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
            tensor = _tensor_in_test(a, node.test)
            if tensor is not None and not rarely_runs(a, node):
                yield _sync(a, node.test, f"`{_keyword(node)} {a.name(node.test)}:`")
        elif (
            isinstance(node, ast.FormattedValue)
            and _maybe_on_device(a, node.value)
            and not rarely_runs(a, node)
        ):
            yield _sync(a, node.value, f"formatting `{a.name(node.value)}` in an f-string")
        elif isinstance(node, ast.Subscript):
            mask = _bool_mask(a, node)
            on_device = mask is not None and (
                _maybe_on_device(a, node.value) or _maybe_on_device(a, mask)
            )
            if mask is not None and on_device and not rarely_runs(a, node):
                masked.append((node.lineno, node.col_offset, node, mask))
    # `out[sel] = f(x[sel])`: one finding for the line, at its first mask (the hot nodes are
    # a set: sorted, the choice is the same in every run)
    seen: set[int] = set()
    for line, _, node, mask in sorted(masked, key=lambda m: (m[0], m[1])):
        if line not in seen:
            seen.add(line)
            what = f"indexing `{a.name(node.value)}` with the boolean mask `{a.name(mask)}`"
            yield _sync(a, node, what + " (its size depends on the values)")


_MASK_OPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _bool_mask(a: Analysis, node: ast.Subscript) -> ast.expr | None:
    """``x[x > 0]``, or ``x[sel]`` after ``sel = types == t`` in the same function: a boolean
    mask, which makes the result's size depend on the values. Not ``x[mask] = 0.0``: a number
    written through a mask is a ``masked_fill_``, which reads nothing."""
    index = node.slice
    stmt = a.parents.get(node)
    if (
        isinstance(node.ctx, ast.Store)
        and isinstance(stmt, ast.Assign | ast.AugAssign)
        and isinstance(stmt.value, ast.Constant | ast.UnaryOp)
    ):
        return None
    value: ast.expr | None = index
    if isinstance(index, ast.Name):
        value = assigned_value(a, index, index.lineno)
    if isinstance(value, ast.Compare) and all(isinstance(op, _MASK_OPS) for op in value.ops):
        return index
    if isinstance(value, ast.Call) and _makes_bool(a, value):
        return index  # `mask = torch.isin(ids, wanted)`, `x.isfinite()`
    return None


# torch functions and tensor methods whose result is a boolean mask
_BOOLEAN = frozenset(
    {"isin", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "logical_and", "logical_or",
     "logical_not", "logical_xor"}
)  # fmt: skip


def _makes_bool(a: Analysis, call: ast.Call) -> bool:
    func = call.func
    q = a.qualname(func)
    if q is not None:
        return q.startswith("torch.") and q.rsplit(".", 1)[-1] in _BOOLEAN
    return isinstance(func, ast.Attribute) and func.attr in _BOOLEAN - {"isin"}


# Ops whose output size depends on the input's values: the host learns it from the device.
_SIZED_BY_VALUES = frozenset(
    {"unique", "unique_consecutive", "nonzero", "argwhere", "masked_select", "bincount"}
)


def _sized_by_values(a: Analysis, call: ast.Call) -> ast.expr | None:
    """The tensor of ``torch.unique(t)``, ``t.nonzero()``, ``torch.masked_select(t, m)``…"""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _SIZED_BY_VALUES:
        return None
    if a.qualname(func) == f"torch.{func.attr}":
        return call.args[0] if call.args else None
    return None if a.qualname(func) is not None else func.value


def _keyword(node: ast.AST) -> str:
    return {ast.While: "while", ast.Assert: "assert"}.get(type(node), "if")


def _tensor_in_test(a: Analysis, test: ast.expr) -> ast.expr | None:
    """The device tensor whose value a condition reads (itself, or a compared operand)."""
    identity = isinstance(test, ast.Compare) and any(
        isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in test.ops
    )
    if identity:
        return None  # `x is None`, `k in cache`: no tensor value is read
    if _maybe_on_device(a, test):
        return test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _tensor_in_test(a, test.operand)
    if isinstance(test, ast.BoolOp):
        return next((t for v in test.values if (t := _tensor_in_test(a, v)) is not None), None)
    if isinstance(test, ast.Compare):
        return next((s for s in (test.left, *test.comparators) if _maybe_on_device(a, s)), None)
    return None


def _sync(a: Analysis, node: ast.AST, what: str) -> Finding:
    return R.ImplicitSyncInHotLoop.finding(
        f"{what} in the hot loop reads a tensor's value on the host, which waits for the GPU "
        "at every step: keep it on the device or check it every N steps",
        a.loc(node),
        Fix("avoid reading tensor values in the loop"),
        severity=_per_step(a, node),
    )


_SYNCHRONIZE = (
    "torch.cuda.synchronize",
    "torch.cuda.empty_cache",
    "torch.mps.synchronize",
    "torch.xpu.synchronize",
    "torch.accelerator.synchronize",
)
_STREAMS = ("torch.cuda.current_stream", "torch.cuda.default_stream")


@detector(R.SynchronizeInHotLoop)
def synchronize_in_hot_loop(a: Analysis) -> Iterator[Finding]:
    for call in a.calls:
        if not a.is_hot(call) or not _is_synchronize(a, call) or rarely_runs(a, call):
            continue
        yield R.SynchronizeInHotLoop.finding(
            f"`{a.name(call)}` in the hot loop stalls the CPU until the GPU is idle at "
            "every step: remove it (synchronize only to time, outside the loop)",
            a.loc(call),
            Fix("remove it from the loop"),
        )


def _is_synchronize(a: Analysis, call: ast.Call) -> bool:
    func = call.func
    if a.qualname(func) in _SYNCHRONIZE:
        return True
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "synchronize"
        and isinstance(func.value, ast.Call)
        and a.qualname(func.value.func) in _STREAMS
    )


_CLOCKS = frozenset({"time.perf_counter", "time.time", "time.monotonic", "timeit.default_timer"})
# Calls that wait for the device (or time it with its own events) between two clock reads.
_WAITS = frozenset(
    {"synchronize", "item", "cpu", "numpy", "tolist", "elapsed_time", "wait", "block_until_ready"}
)


@detector(R.TimingWithoutSynchronize)
def timing_without_synchronize(a: Analysis) -> Iterator[Finding]:
    if "time" not in a.source or not a.uses_accelerator:
        return
    for owner in {a.function_of(c) or a.tree for c in a.call_named(*_CLOCKS)}:
        if "cpu" in getattr(owner, "name", "").lower():
            continue  # `def time_cpu(fn, inputs)`: the host's timing, beside a CUDA one
        nodes = list(walk_local(owner))
        starts = _clock_names(a, nodes)
        for node in nodes:
            if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)):
                continue
            end: ast.expr | None = node.left
            start = node.right
            if isinstance(end, ast.Name) and end.id in starts:
                end = assigned_value(a, end, node.lineno)  # `end = time.time()` above
            if not (
                isinstance(start, ast.Name)
                and start.id in starts
                and end is not None
                and _is_clock(a, end)
            ):
                continue
            begin = starts[start.id]
            between = [n for n in nodes if begin < getattr(n, "lineno", 0) <= end.lineno]
            calls = [n for n in between if isinstance(n, ast.Call)]
            model = next((c for c in calls if _timed_work(a, c, owner)), None)
            if model is None or any(_waits(a, c) for c in calls):
                continue
            if _events_time_the_other_branch(a, end):
                continue
            yield R.TimingWithoutSynchronize.finding(
                f"`{a.name(end)}` reads the clock after `{a.name(model)}` (line {model.lineno}) "
                "without waiting for the GPU: CUDA calls return once queued, so this times the "
                "launch; call `torch.cuda.synchronize()` before reading the clock",
                a.loc(end),
                Fix(
                    "call torch.cuda.synchronize() before the clock read (or time with "
                    "torch.cuda.Event(enable_timing=True))"
                ),
                related=(a.loc(model),),
            )
    yield from _split_timers(a)


_STARTS, _STOPS = ("start", "begin", "before"), ("end", "after", "stop")


def _named(method: ast.AST | None, words: tuple[str, ...]) -> bool:
    name = method.name.lower() if isinstance(method, ast.FunctionDef) else ""
    return any(word in name for word in words)


def _split_timers(a: Analysis) -> Iterator[Finding]:
    """A callback's timer: ``self._t0 = time.perf_counter()`` in one method (at a batch's
    start) and ``time.perf_counter() - self._t0`` in another (at its end), with no wait for
    the GPU in either: the model ran between them, from code that calls both."""
    for node in a.of_type(ast.BinOp):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)):
            continue
        stop_method = a.function_of(node)
        cls = a.class_of(stop_method) if stop_method is not None else None
        holder = _timer_holder(node.right)
        if stop_method is None or cls is None or holder is None:
            continue
        end = _clock_read(a, stop_method, node.left)
        if end is None:
            continue
        started = [
            stmt
            for method in cls.body
            if isinstance(method, ast.FunctionDef) and method is not stop_method
            for stmt in walk_local(method)
            if isinstance(stmt, ast.Assign)
            and any(_timer_holder(t, stored=True) == holder for t in stmt.targets)
            and _clock_read(a, method, stmt.value) is not None
        ]
        if len(started) != 1:
            continue
        start_method = a.function_of(started[0])
        named = _named(start_method, _STARTS) and _named(stop_method, _STOPS)
        if not (named or _hooked_around_forward(a, start_method, stop_method)):
            continue  # hooks around a step (`on_batch_start` / `on_batch_end`), nothing else
        calls = [
            c
            for method in (start_method, stop_method)
            if method is not None
            for c in walk_local(method)
            if isinstance(c, ast.Call)
        ]
        if any(_waits(a, c) for c in calls) or _events_time_the_other_branch(a, end):
            continue
        yield R.TimingWithoutSynchronize.finding(
            f"`{a.name(end)}` ends a timer started in another method (line "
            f"{started[0].lineno}) without waiting for the GPU: the work between the two calls "
            "was only queued, so this times the launch; call `torch.cuda.synchronize()` before "
            "each clock read",
            a.loc(end),
            Fix(
                "call torch.cuda.synchronize() before both clock reads (or time with "
                "torch.cuda.Event(enable_timing=True))"
            ),
            related=(a.loc(started[0]),),
        )


def _events_time_the_other_branch(a: Analysis, clock: ast.AST) -> bool:
    """``if use_events: start.record() ... else: t0 = time.perf_counter()`` (or an ``if``
    that records events and returns before the clock): the clock times the host fallback,
    and CUDA events time the device."""
    child = clock
    for up in a.ancestors(clock):
        if isinstance(up, ast.If) and child is not up.test:
            other = up.orelse if child in up.body else up.body
            if _records_events(other):
                return True
        for block in _blocks_of(up):
            if child in block:
                before = block[: block.index(child)]
                if any(
                    isinstance(s, ast.If) and _returns(s.body) and _records_events(s.body)
                    for s in before
                ):
                    return True
        if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return False
        child = up
    return False


def _blocks_of(node: ast.AST) -> list[list[ast.stmt]]:
    return [b for b in (getattr(node, f, None) for f in ("body", "orelse")) if isinstance(b, list)]


def _returns(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return | ast.Raise)


def _records_events(body: list[ast.stmt]) -> bool:
    return any(
        isinstance(n, ast.Call) and last_name(n.func) in ("Event", "record")
        for stmt in body
        for n in ast.walk(stmt)
    )


def _timer_holder(node: ast.expr, stored: bool = False) -> str | None:
    """``self._t0`` for ``self._t0``, ``self._start[module]`` or (read) ``self._start.pop(m)``:
    the attribute of ``self`` that holds a timer's start."""
    if isinstance(node, ast.Subscript):
        node = node.value
    elif not stored and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value if node.func.attr in ("pop", "get") else node
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"self.{node.attr}" if node.value.id == "self" else None
    return None


def _hooked_around_forward(a: Analysis, start: ast.AST | None, stop: ast.AST | None) -> bool:
    """``register_forward_pre_hook(self._pre)`` and ``register_forward_hook(self._post)``: the
    two methods run before and after a module's forward (a per-layer timer)."""
    names = {"register_forward_pre_hook": start, "register_forward_hook": stop}
    found = 0
    for registration, method in names.items():
        if not isinstance(method, ast.FunctionDef):
            return False
        given = [call.args[0] for call, _ in a.method_calls(registration) if call.args]
        found += any(
            isinstance(g, ast.Attribute) and is_self_attr(g) and g.attr == method.name
            for g in given
        )
    return found == 2


def _clock_read(a: Analysis, method: ast.AST, value: ast.expr) -> ast.expr | None:
    """The clock call ``value`` is: itself (``time.perf_counter()``), or the one a name of
    ``method`` was set to (``now = time.perf_counter()`` ... ``now - self._t0``)."""
    if _is_clock(a, value):
        return value
    if not isinstance(value, ast.Name):
        return None
    reads = [
        node.value
        for node in walk_local(method)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id == value.id
    ]
    return reads[0] if len(reads) == 1 and _is_clock(a, reads[0]) else None


def _waits(a: Analysis, call: ast.Call) -> bool:
    """``torch.cuda.synchronize()``, ``.item()``…, or a helper of the file that calls one
    (``self._sync()``)."""
    if last_name(call.func) in _WAITS:
        return True
    helper = a.own_callee(call)
    return helper is not None and any(
        isinstance(n, ast.Call) and last_name(n.func) in _WAITS for n in walk_local(helper)
    )


_TIMING_WORDS = ("time", "bench", "measure", "profile", "latency", "throughput", "speed")


def _timed_work(a: Analysis, call: ast.Call, owner: ast.AST) -> bool:
    """A model call, or in a timing helper (``def time_op(fn)``, ``benchmark(step)``) a call
    of the callable it was given: the work a benchmark of GPU code times."""
    if looks_like_model_call(a, call):
        return True
    if not isinstance(owner, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    if not any(word in owner.name.lower() for word in _TIMING_WORDS):
        return False
    params = {
        arg.arg for arg in (*owner.args.posonlyargs, *owner.args.args, *owner.args.kwonlyargs)
    }
    return isinstance(call.func, ast.Name) and call.func.id in params


def _is_clock(a: Analysis, node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and a.qualname(node.func) in _CLOCKS


def _clock_names(a: Analysis, nodes: list[ast.AST]) -> dict[str, int]:
    """Names bound to a clock read (``start = time.perf_counter()``) and the line, the last
    binding first-come (a timing loop rebinds ``start`` at the top of each iteration)."""
    out: dict[str, int] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _is_clock(a, node.value):
            target = node.targets[0]
            if isinstance(target, ast.Name):
                out.setdefault(target.id, node.lineno)
    return out
