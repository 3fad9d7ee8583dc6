"""Static detectors of multi-GPU and distributed mistakes (TP4xx)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector, last_name
from torchport.analyze.checks.values import (
    assigned_value,
    is_parameter,
    made_at,
    parameter_defaults,
    passes_argument,
    rebinds,
)
from torchport.analyze.context import Func, is_self_attr, walk_local
from torchport.analyze.edits import replace_node
from torchport.analyze.infer import keyword
from torchport.findings import Edit, Finding, Fix, Safety, Severity
from torchport.rules import distributed as R

_DDP = "torch.nn.parallel.DistributedDataParallel"


@detector(R.DataParallelUsed)
def data_parallel_used(a: Analysis) -> Iterator[Finding]:
    for call in a.call_named("torch.nn.DataParallel"):
        yield R.DataParallelUsed.finding(
            f"`{a.name(call)}` runs one process driving all GPUs, bottlenecked by the GIL and "
            "GPU 0: use DistributedDataParallel launched with torchrun",
            a.loc(call),
            Fix("use DistributedDataParallel under torchrun (`torchport port` converts it)"),
        )


@detector(R.DdpWithoutDeviceIds)
def ddp_without_device_ids(a: Analysis) -> Iterator[Finding]:
    if not a.uses_accelerator or any(a.method_calls("set_device")):
        return
    for call in a.call_named(_DDP):
        if keyword(call, "device_ids") is not None or len(call.args) != 1:
            continue
        model = a.info(call.args[0])
        if model is None or model.device != "accel":
            continue  # a CPU (gloo) model needs no device_ids
        if any(k.arg is None for k in call.keywords):
            continue
        yield R.DdpWithoutDeviceIds.finding(
            f"`{a.name(call)}` has no `device_ids` and the script never calls "
            "`torch.cuda.set_device`: every process may use GPU 0; pass "
            "`device_ids=[local_rank]`",
            a.loc(call),
            Fix("pass `device_ids=[local_rank]` and call `torch.cuda.set_device(local_rank)`"),
        )


_SAMPLER = "torch.utils.data.DistributedSampler"


def _samplers(a: Analysis) -> Iterator[tuple[ast.Call, str | None]]:
    """Each DistributedSampler and the name (or attribute text) it is assigned to."""
    for call in a.call_named(_SAMPLER):
        stmt = a.parents.get(call)
        name = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            name = a.text(stmt.targets[0])
        yield call, name


def _set_epoch_receivers(a: Analysis) -> set[str]:
    """What ``set_epoch`` is called on: ``sampler``, ``loader.sampler``, ``self.sampler``."""
    return {a.text(func.value) for _, func in a.method_calls("set_epoch")}


def _loaders_by_sampler(a: Analysis) -> dict[str, list[str]]:
    """Sampler text -> the names of the DataLoaders built with ``sampler=`` it."""
    out: dict[str, list[str]] = {}
    for call in a.call_named("torch.utils.data.DataLoader"):
        sampler = keyword(call, "sampler")
        if sampler is None:
            continue
        stmt = a.parents.get(call)
        loader = ""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            loader = a.text(stmt.targets[0])
        out.setdefault(a.text(sampler), []).append(loader)
    return out


@detector(R.SamplerWithoutSetEpoch)
def sampler_without_set_epoch(a: Analysis) -> Iterator[Finding]:
    samplers = list(_samplers(a))
    receivers = _set_epoch_receivers(a)
    loaders = _loaders_by_sampler(a)
    known = {alias for _, name in samplers if name for alias in _aliases(name, loaders)}
    for call, name in samplers:
        shuffle = keyword(call, "shuffle")
        if isinstance(shuffle, ast.Constant) and shuffle.value is False:
            continue
        if receivers and (name is None or receivers & _aliases(name, loaders)):
            continue
        if receivers - known:
            continue  # set_epoch on something we cannot tie to a sampler: it may be this one
        yield R.SamplerWithoutSetEpoch.finding(
            f"`{a.name(call)}` shuffles with a seed based on the epoch, but `set_epoch` is "
            "never called on it: every epoch sees the same order; call "
            f"`{name or 'sampler'}.set_epoch(epoch)` at the start of each epoch",
            a.loc(call),
            Fix("call `sampler.set_epoch(epoch)` each epoch"),
            related=tuple(a.loc(loop) for loop in _epoch_loops(a)),
        )
    yield from _epoch_left_at_default(a)


def _epoch_left_at_default(a: Analysis) -> Iterator[Finding]:
    """``def _get_sampler(self, epoch=0): ... sampler.set_epoch(epoch)`` called as
    ``self._get_sampler()`` from a function that has the epoch at hand: every epoch gets the
    default, so the same order."""
    for call, _ in a.method_calls("set_epoch"):
        given = call.args[0] if len(call.args) == 1 else None
        func = a.function_of(call)
        if not isinstance(given, ast.Name) or func is None:
            continue
        default = _constant_default(func, given.id)
        if default is None:
            continue
        for caller in a.calls_of(func):
            if a.own_callee(caller) is not func or passes_argument(caller, func, given.id):
                continue
            outer = a.function_of(caller)
            if outer is None or not _has_epoch(outer):
                continue
            yield R.SamplerWithoutSetEpoch.finding(
                f"`{a.name(caller)}` leaves `{given.id}` at its default {default!r}, so "
                f"`{a.name(call)}` (line {call.lineno}) sets the same epoch every time and "
                f"every epoch sees the same order; pass the epoch (`{given.id}=epoch`)",
                a.loc(caller),
                Fix(f"pass `{given.id}=epoch`"),
                related=(a.loc(call),),
            )


def _constant_default(func: Func, name: str) -> object | None:
    value = parameter_defaults(func).get(name)
    return value.value if isinstance(value, ast.Constant) and value.value is not None else None


def _has_epoch(func: Func) -> bool:
    """A parameter or loop variable of ``func`` that names the epoch."""
    params = [p.arg for p in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]]
    loops = [
        n.target.id
        for n in walk_local(func)
        if isinstance(n, ast.For) and isinstance(n.target, ast.Name)
    ]
    return any("epoch" in name.lower() for name in params + loops)


def _epoch_loops(a: Analysis) -> list[ast.For]:
    """``for epoch in range(...)``: where ``set_epoch`` belongs (the first two of the file)."""
    loops = [
        loop
        for loop in a.of_type(ast.For)
        if isinstance(loop, ast.For)
        and isinstance(loop.target, ast.Name)
        and "epoch" in loop.target.id.lower()
    ]
    return loops[:2]


def _aliases(name: str, loaders: dict[str, list[str]]) -> set[str]:
    """``sampler`` and ``loader.sampler`` for each DataLoader built with it."""
    return {name} | {f"{loader}.sampler" for loader in loaders.get(name, []) if loader}


@detector(R.DistributedSamplerUnused)
def distributed_sampler_unused(a: Analysis) -> Iterator[Finding]:
    for call, name in _samplers(a):
        if name is None or not name.isidentifier():
            continue
        owner = a.function_of(call) or a.tree
        uses = [
            n
            for n in walk_local(owner)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        ]
        used = [u for u in uses if not _only_set_epoch(a, u)]
        if used:
            continue
        yield R.DistributedSamplerUnused.finding(
            f"`{name}` ({a.name(call)}) is never passed to a DataLoader (`sampler={name}`): "
            "every process iterates the whole dataset",
            a.loc(call),
            Fix(f"pass `sampler={name}` to the DataLoader (and drop `shuffle=True`)"),
        )


def _only_set_epoch(a: Analysis, use: ast.Name) -> bool:
    parent = a.parents.get(use)
    return isinstance(parent, ast.Attribute) and parent.attr == "set_epoch"


@detector(R.ShuffleWithSampler)
def shuffle_with_sampler(a: Analysis) -> Iterator[Finding]:
    for call in a.call_named("torch.utils.data.DataLoader"):
        shuffle = keyword(call, "shuffle")
        if keyword(call, "sampler") is None or not isinstance(shuffle, ast.Constant):
            continue
        if shuffle.value is not True:
            continue
        kw = next(k for k in call.keywords if k.arg == "shuffle")
        yield R.ShuffleWithSampler.finding(
            f"`{a.name(call)}` passes both `sampler=` and `shuffle=True`, which DataLoader "
            "rejects: remove `shuffle=True` (the sampler shuffles)",
            a.loc(kw),
            Fix("remove `shuffle=True`", (_remove_keyword(a, call, kw),), Safety.UNSAFE),
        )


def _remove_keyword(a: Analysis, call: ast.Call, kw: ast.keyword) -> Edit:
    """Delete ``kw`` and the comma before it (or after it, when it comes first)."""
    parts: list[ast.AST] = [*call.args, *call.keywords]
    parts.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    index = parts.index(kw)
    if index > 0:
        start = a.end(parts[index - 1])
        end = a.end(kw)
    elif len(parts) > 1:
        start, end = a.start(kw), a.start(parts[1])
    else:
        return replace_node(a, kw, "")
    return Edit(start[0], start[1], end[0], end[1], "")


_GUARDS = ("rank", "main_process", "is_main", "master", "zero")


@detector(R.UnguardedCheckpointSave)
def unguarded_checkpoint_save(a: Analysis) -> Iterator[Finding]:
    # Judged per function: the one that starts the process group (or wraps the model in DDP)
    # is where an unguarded save runs on every rank, and so are the same-file functions and
    # methods (a checkpoint callback) it calls without a rank check.
    starts = {a.function_of(c) for c in a.call_named("torch.distributed.init_process_group", _DDP)}
    called = _called_unguarded(a, starts)  # helper -> where the job calls it, unguarded
    for call in a.call_named("torch.save"):
        func = a.function_of(call)
        if func not in starts and func not in called:
            continue
        if _rank_zero_only(a, call):
            continue
        if _writes_temporary_file(a, call):
            continue  # each process has a file of its own
        yield R.UnguardedCheckpointSave.finding(
            f"`{a.name(call)}` runs on every process of a distributed job: guard it with "
            "`if dist.get_rank() == 0:`",
            a.loc(call),
            Fix("save only on rank 0"),
            related=tuple(a.loc(site) for site in called.get(func, ())),
        )

    yield from _saved_per_node(a, starts)


def _saved_per_node(a: Analysis, starts: set[Func | None]) -> Iterator[Finding]:
    """``if args.local_rank == 0: save(...)`` in the job: the first process of every node
    saves (on a shared filesystem, several nodes write one file); info, since one node is
    fine."""
    for func in starts:
        for node in walk_local(func or a.tree):
            if not isinstance(node, ast.If):
                continue
            test = a.text(node.test).lower()
            if "local_rank" not in test or "get_rank" in test:
                continue
            if not any(_saves(a, call, func) for stmt in node.body for call in _calls(stmt)):
                continue
            yield R.UnguardedCheckpointSave.finding(
                f"`{a.text(node.test)}` lets the first process of every node save: with more "
                "than one node they all write the checkpoint; guard with the global rank "
                "(`dist.get_rank() == 0`)",
                a.loc(node.test),
                Fix("guard the save with dist.get_rank() == 0"),
                severity=Severity.INFO,
            )


def _calls(stmt: ast.stmt) -> Iterator[ast.Call]:
    return (n for n in ast.walk(stmt) if isinstance(n, ast.Call))


def _saves(a: Analysis, call: ast.Call, root: Func | None) -> bool:
    """``torch.save(...)``, or a same-file function whose body calls it."""
    if a.qualname(call.func) == "torch.save":
        return True
    callee = _same_file_callee(a, call, root or a.tree)
    return callee is not None and any(
        a.qualname(c.func) == "torch.save" for c in walk_local(callee) if isinstance(c, ast.Call)
    )


def _is_guard(a: Analysis, node: ast.AST) -> bool:
    if isinstance(node, ast.If | ast.IfExp):
        return any(g in a.text(node.test).lower() for g in _GUARDS)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        # a helper such as save_on_master() is guarded by its name
        return any(g in node.name.lower() for g in _GUARDS)
    return False


def _returned_unless_main(a: Analysis, call: ast.Call) -> bool:
    """An early ``if dist.get_rank() != 0: return`` above ``call`` in its function."""
    func = a.function_of(call)
    return func is not None and any(
        isinstance(stmt, ast.If)
        and stmt.lineno < call.lineno
        and isinstance(stmt.body[-1], ast.Return)
        and _is_guard(a, stmt)
        for stmt in func.body
    )


_TEMPORARY_FILES = {
    f"tempfile.{n}" for n in ("NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile")
}


def _writes_temporary_file(a: Analysis, save: ast.Call) -> bool:
    """``torch.save(obj, tmp)`` or ``tmp.name`` with ``with tempfile.NamedTemporaryFile() as
    tmp`` in the same function."""
    target = _saved_to(save)
    if isinstance(target, ast.Attribute) and target.attr == "name":
        target = target.value
    if not isinstance(target, ast.Name):
        return False
    return any(
        isinstance(item, ast.withitem)
        and isinstance(item.optional_vars, ast.Name)
        and item.optional_vars.id == target.id
        and isinstance(item.context_expr, ast.Call)
        and a.qualname(item.context_expr.func) in _TEMPORARY_FILES
        for item in walk_local(a.function_of(save) or a.tree)
    )


def _called_unguarded(a: Analysis, callers: set[Func | None]) -> dict[Func | None, list[ast.Call]]:
    """Same-file functions and methods that ``callers`` call outside any rank check, and those
    these call so in turn (``train()`` -> ``checkpointer.save()``), with the calls."""
    out: dict[Func | None, list[ast.Call]] = {}
    todo = list(callers)
    while todo:
        root = todo.pop() or a.tree
        for node in walk_local(root):
            if not isinstance(node, ast.Call):
                continue
            callee = _same_file_callee(a, node, root)
            if callee is None or callee in callers:
                continue
            if not any(_is_guard(a, up) for up in _ancestors_within(a, node, root)):
                if callee not in out and not _is_guard(a, callee):
                    todo.append(callee)
                out.setdefault(callee, []).append(node)
    return out


def _ancestors_within(a: Analysis, node: ast.AST, root: ast.AST) -> Iterator[ast.AST]:
    for up in a.ancestors(node):
        if up is root:
            return
        yield up


def _same_file_callee(a: Analysis, call: ast.Call, root: ast.AST) -> Func | None:
    """What ``f(...)``, ``self.m(...)`` or ``obj.m(...)`` (``obj = Cls(...)`` above, in the
    same function) calls, when the file defines it."""
    func = call.func
    if isinstance(func, ast.Name) or is_self_attr(func):
        return a.own_callee(call)
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    made = assigned_value(a, func.value, call.lineno)
    if isinstance(made, ast.Call) and isinstance(made.func, ast.Name):
        cls = a.classes.get(made.func.id)
        return None if cls is None else a.method(cls, func.attr)
    if made is None and not func.attr.startswith("_"):
        # a parameter (``checkpointer.save(...)``): the one plain class of the file with
        # that method, if only one has it
        plain = [c for n, c in a.classes.items() if n not in a.module_classes]
        found = [m for m in (a.method(c, func.attr) for c in plain) if m is not None]
        return found[0] if len(found) == 1 else None
    return None


_COLLECTIVES = {
    f"torch.distributed.{n}"
    for n in (
        "all_reduce",
        "all_gather",
        "all_gather_into_tensor",
        "broadcast",
        "reduce",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "all_to_all_single",
    )
}


@detector(R.CollectiveOnCpuTensorWithNccl)
def collective_on_cpu_tensor_with_nccl(a: Analysis) -> Iterator[Finding]:
    if not _may_use_nccl(a):
        return
    for call in a.call_named(*_COLLECTIVES):
        if keyword(call, "group") is not None:
            continue  # a group of its own, perhaps gloo for CPU tensors
        # the tensor sent is the first argument, or the second after an output list
        # (`all_gather(outputs, tensor)`): one finding per call, for the first CPU one
        for arg in call.args[:2]:
            found = False
            for given in _given_through_helper(a, arg):
                info = a.info(given)
                if info is None or info.kind != K.TENSOR or info.device != "cpu":
                    continue
                made = given
                if isinstance(given, ast.Name):
                    made = assigned_value(a, given, given.lineno) or given
                if not info.origin or (isinstance(made, ast.Call) and keyword(made, "device")):
                    continue  # only a tensor evidently made on the CPU (not `device=device`)
                via = "" if given is arg else f" (through `{a.name(arg)}` at line {call.lineno})"
                yield R.CollectiveOnCpuTensorWithNccl.finding(
                    f"`{a.name(given)}` ({info.origin}) goes to `{a.name(call.func)}`{via} "
                    "while the process group may use NCCL, which only moves GPU tensors: "
                    "create it on the device (`device=device`)",
                    a.loc(given),
                    Fix("create the tensor on the process's GPU"),
                    related=made_at(a, given),
                )
                found = True
            if found:
                break


def _given_through_helper(a: Analysis, arg: ast.expr) -> list[ast.expr]:
    """``arg`` itself, or, when it is a parameter of a same-file helper that hands it on
    unchanged (``def _reduce(self, t): dist.all_reduce(t)``), what each call gives it."""
    func = a.function_of(arg)
    if not isinstance(arg, ast.Name) or func is None:
        return [arg]
    if not is_parameter(func, arg.id) or rebinds(func, arg.id, copies_too=False):
        return [arg]
    return [given for given in a.given(func, arg.id) if given is not None]


@detector(R.NcclGroupWithoutDevice)
def nccl_group_without_device(a: Analysis) -> Iterator[Finding]:
    if not _may_use_nccl(a):
        return
    if _sets_device(a):
        yield from _gpu_used_before_set_device(a)
        return
    for call in a.call_named("torch.distributed.init_process_group"):
        backend = call.args[0] if call.args else keyword(call, "backend")
        if isinstance(backend, ast.Name):
            backend = assigned_value(a, backend, call.lineno)
        if backend is None or "nccl" not in a.text(backend):
            continue
        yield R.NcclGroupWithoutDevice.finding(
            "this NCCL process group starts while every process's current GPU is still GPU 0 "
            "(the file never calls `torch.cuda.set_device`): NCCL, `barrier()` and index-less "
            "CUDA calls of all ranks use GPU 0; call `torch.cuda.set_device(local_rank)` first",
            a.loc(call),
            Fix("call torch.cuda.set_device(local_rank) before init_process_group"),
            related=tuple(a.loc(d) for d in _indexless_devices(a)[:2]),
        )


def _gpu_used_before_set_device(a: Analysis) -> Iterator[Finding]:
    """``device="cuda"`` (or ``.cuda()``) after the group starts but before
    ``torch.cuda.set_device(local_rank)`` in the same function: GPU 0 on every rank."""
    for pick, _ in a.method_calls("set_device"):
        owner = a.function_of(pick)
        starts = [
            c.lineno
            for c in a.call_named("torch.distributed.init_process_group")
            if a.function_of(c) is owner and c.lineno < pick.lineno
        ]
        if not starts:
            continue
        for call in a.calls:
            if not min(starts) < call.lineno < pick.lineno or a.function_of(call) is not owner:
                continue
            if _on_gpu_zero(a, call):
                yield R.NcclGroupWithoutDevice.finding(
                    f"`{a.name(call)}` runs before `{a.name(pick)}` (line {pick.lineno}): each "
                    "process's current GPU is still GPU 0, so every rank puts this tensor (and "
                    "NCCL's communicator) on GPU 0; choose the GPU first",
                    a.loc(call),
                    Fix("call torch.cuda.set_device(local_rank) before any CUDA work"),
                    related=(a.loc(pick),),
                )
                return


def _on_gpu_zero(a: Analysis, call: ast.Call) -> bool:
    """A tensor made on, or moved to, the index-less ``"cuda"``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "cuda" and not call.args:
        return not call.keywords
    device = keyword(call, "device")
    if isinstance(func, ast.Attribute) and func.attr == "to" and call.args:
        device = call.args[0]
    return isinstance(device, ast.Constant) and device.value == "cuda"


def _indexless_devices(a: Analysis) -> list[ast.Call]:
    """``torch.device("cuda")`` (also as the GPU arm of a choice): the device each process
    then takes, GPU 0 for all of them."""
    found = []
    for call in a.call_named("torch.device"):
        first = call.args[0] if len(call.args) == 1 and not call.keywords else None
        arms = [first.body, first.orelse] if isinstance(first, ast.IfExp) else [first]
        if any(isinstance(arm, ast.Constant) and arm.value == "cuda" for arm in arms):
            found.append(call)
    return found


def _sets_device(a: Analysis) -> bool:
    """The file picks each process's GPU: ``set_device``, a group ``device_id``, or
    ``CUDA_VISIBLE_DEVICES`` (set per process, each sees only its own GPU)."""
    if any(a.method_calls("set_device")) or "CUDA_VISIBLE_DEVICES" in a.source:
        return True
    return any(keyword(c, "device_id") is not None for c in a.calls)


def _may_use_nccl(a: Analysis) -> bool:
    """The file starts a process group and names the "nccl" backend somewhere."""
    if "nccl" not in a.source or not any(a.call_named("torch.distributed.init_process_group")):
        return False
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and "nccl" in n.value
        for n in a.of_type(ast.Constant)
    )


@detector(R.LoadRacesRankZeroSave)
def load_races_rank_zero_save(a: Analysis) -> Iterator[Finding]:
    if not any(a.call_named(_INIT, _DDP)):
        return
    saves = [
        (call, path)
        for call in a.call_named("torch.save")
        if (path := _saved_to(call)) is not None and _rank_zero_only(a, call)
    ]
    if not saves:
        return
    for load in a.call_named("torch.load"):
        path = load.args[0] if load.args else keyword(load, "f")
        owner = a.function_of(load)
        if path is None or owner is None or _rank_zero_only(a, load):
            continue
        above = _called_above(a, owner, load.lineno)
        save = next(
            (
                s
                for s, p in saves
                if a.text(p) == a.text(path) and _unwaited(a, s, load, owner, above)
            ),
            None,
        )
        if save is None:
            continue
        yield R.LoadRacesRankZeroSave.finding(
            f"`{a.name(load)}` runs on every process, while only rank 0 writes "
            f"`{a.text(path)}` (line {save.lineno}) and nothing waits for it: the other ranks "
            "may read a file half written, missing or stale",
            a.loc(load),
            Fix("call dist.barrier() after the rank-0 save, before loading"),
            related=(a.loc(save),),
        )


_INIT = "torch.distributed.init_process_group"


def _saved_to(save: ast.Call) -> ast.expr | None:
    return save.args[1] if len(save.args) > 1 else keyword(save, "f")


def _rank_zero_only(a: Analysis, call: ast.Call) -> bool:
    return any(_is_guard(a, up) for up in a.ancestors(call)) or _returned_unless_main(a, call)


def _unwaited(a: Analysis, save: ast.Call, load: ast.Call, owner: Func, above: set[Func]) -> bool:
    """Whether ``save`` runs before ``load`` (above it in the same function, or in a function
    called above it) with no ``barrier()`` between: after the save in its function, above
    the load in its own, or in a function called above the load."""
    holder = a.function_of(save)
    if holder is owner:
        if save.lineno > load.lineno:
            return False
        return not _barrier_in(owner, save.lineno, load.lineno)
    if holder is None or holder not in above:
        return False
    return not (
        _barrier_in(holder, save.lineno, None)
        or _barrier_in(owner, 0, load.lineno)
        or any(_barrier_in(f, 0, None) for f in above)
    )


def _barrier_in(func: Func, after: int, before: int | None) -> bool:
    return any(
        isinstance(n, ast.Call)
        and last_name(n.func) == "barrier"
        and after < n.lineno
        and (before is None or n.lineno < before)
        for n in walk_local(func)
    )


def _called_above(a: Analysis, owner: Func, line: int) -> set[Func]:
    """The same-file functions that ``owner`` calls above ``line``, and those they call (two
    calls deep)."""
    reached: set[Func] = set()
    todo = [
        (callee, 1)
        for c in walk_local(owner)
        if isinstance(c, ast.Call)
        and c.lineno < line
        and (callee := _same_file_callee(a, c, owner)) is not None
    ]
    while todo:
        func, depth = todo.pop()
        if func in reached:
            continue
        reached.add(func)
        if depth > 0:
            todo += [
                (callee, depth - 1)
                for c in walk_local(func)
                if isinstance(c, ast.Call) and (callee := _same_file_callee(a, c, func)) is not None
            ]
    return reached


@detector(R.ParameterUnusedUnderDdp)
def parameter_unused_under_ddp(a: Analysis) -> Iterator[Finding]:
    if "Parameter" not in a.source:
        return
    wrap = next(
        (c for c in a.call_named(_DDP) if not _finds_unused(c)),
        None,
    )
    if wrap is None:
        return
    for name in a.module_classes:
        cls = a.classes[name]
        init = a.method(cls, "__init__")
        if init is None:
            continue
        switches = _switches_off(a, cls, init)
        if not switches:
            continue
        for stmt, attr in _parameters_made(a, cls, init):
            switch = _only_read_under(a, cls, attr, switches)
            if switch is None:
                continue
            yield R.ParameterUnusedUnderDdp.finding(
                f"`self.{attr}` is read only when `self.{switch}` is on, and `{name}` leaves "
                f"it off: the parameter gets no gradient, and `{a.name(wrap)}` (line "
                f"{wrap.lineno}, no find_unused_parameters=True) stops at the next step",
                a.loc(stmt),
                Fix(
                    f"make `self.{attr}` only when `{switch}` is on, or pass "
                    "find_unused_parameters=True"
                ),
                related=(a.loc(wrap),),
            )


def _finds_unused(call: ast.Call) -> bool:
    given = keyword(call, "find_unused_parameters")
    return given is not None and not (isinstance(given, ast.Constant) and given.value is False)


def _switches_off(a: Analysis, cls: ast.ClassDef, init: Func) -> set[str]:
    """``self.flag = flag`` in ``__init__`` whose default is ``False``, where no call of the
    class in the file passes that parameter."""
    defaults = parameter_defaults(init)
    off = {p for p, d in defaults.items() if isinstance(d, ast.Constant) and d.value is False}
    passed = {p for p in off if any(given for _, given in a.given_by_call(init, p))}
    out: set[str] = set()
    for attr, assignments in a.attr_assignments(cls).items():
        for stmt, value in assignments:
            if (
                a.function_of(stmt) is init
                and isinstance(value, ast.Name)
                and value.id in off
                and value.id not in passed
            ):
                out.add(attr)
    return out


def _parameters_made(a: Analysis, cls: ast.ClassDef, init: Func) -> Iterator[tuple[ast.stmt, str]]:
    """``self.<attr> = nn.Parameter(...)`` in ``__init__``, with the attribute."""
    for attr, assignments in a.attr_assignments(cls).items():
        for stmt, value in assignments:
            if (
                a.function_of(stmt) is init
                and isinstance(value, ast.Call)
                and a.qualname(value.func) == "torch.nn.Parameter"
            ):
                yield stmt, attr


def _only_read_under(a: Analysis, cls: ast.ClassDef, attr: str, switches: set[str]) -> str | None:
    """The switch every read of ``self.<attr>`` outside ``__init__`` sits under (an ``if``
    whose test reads ``self.<switch>``), if there is one and some read."""
    found: str | None = None
    reads = 0
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef) or method.name == "__init__":
            continue
        for node in walk_local(method):
            if not (isinstance(node, ast.Attribute) and is_self_attr(node, attr)):
                continue
            reads += 1
            guard = next(
                (
                    s
                    for up in a.ancestors(node)
                    if isinstance(up, ast.If)
                    for s in switches
                    if any(is_self_attr(n, s) for n in ast.walk(up.test) if isinstance(n, ast.expr))
                ),
                None,
            )
            if guard is None:
                return None
            found = guard
    return found if reads else None
