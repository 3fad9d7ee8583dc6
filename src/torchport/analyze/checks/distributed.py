"""Static detectors of multi-GPU and distributed mistakes (TP4xx)."""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterable, Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.checks.values import assigned_value
from torchport.analyze.context import Func, walk_local
from torchport.analyze.edits import replace_node
from torchport.analyze.infer import keyword
from torchport.findings import Edit, Finding, Fix, Safety
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
        )


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
    distributed = {
        a.function_of(c) for c in a.call_named("torch.distributed.init_process_group", _DDP)
    }
    distributed |= _called_unguarded(a, distributed)
    for call in a.call_named("torch.save"):
        if a.function_of(call) not in distributed:
            continue
        if any(_is_guard(a, up) for up in a.ancestors(call)) or _returned_unless_main(a, call):
            continue
        if _writes_temporary_file(a, call):
            continue  # each process has a file of its own
        yield R.UnguardedCheckpointSave.finding(
            f"`{a.name(call)}` runs on every process of a distributed job: guard it with "
            "`if dist.get_rank() == 0:`",
            a.loc(call),
            Fix("save only on rank 0"),
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
    target = save.args[1] if len(save.args) > 1 else keyword(save, "f")
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


def _called_unguarded(a: Analysis, callers: set[Func | None]) -> set[Func | None]:
    """Same-file functions and methods that ``callers`` call outside any rank check."""
    out: set[Func | None] = set()
    for caller in callers:
        root = caller or a.tree
        for node in walk_local(root):
            if not isinstance(node, ast.Call):
                continue
            callee = _same_file_callee(a, node, root)
            if callee is None or callee in callers:
                continue
            if not any(_is_guard(a, up) for up in _ancestors_within(a, node, root)):
                out.add(callee)
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
    if isinstance(func, ast.Name):
        return a.functions.get(func.id)
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    if func.value.id == "self":
        cls = a.class_of(root)
        return None if cls is None else a.method(cls, func.attr)
    made = assigned_value(a, func.value, call.lineno)
    if isinstance(made, ast.Call) and isinstance(made.func, ast.Name):
        cls = a.classes.get(made.func.id)
        return None if cls is None else a.method(cls, func.attr)
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
        for arg in call.args[:2]:
            info = a.info(arg)
            if info is None or info.kind != K.TENSOR or info.device != "cpu" or not info.origin:
                continue  # only a tensor evidently made here on the CPU
            yield R.CollectiveOnCpuTensorWithNccl.finding(
                f"`{a.name(arg)}` ({info.origin}) goes to "
                f"`{a.name(call.func)}` while the process group may use NCCL, which only "
                "moves GPU tensors: create it on the device (`device=device`)",
                a.loc(arg),
                Fix("create the tensor on the process's GPU"),
            )
            break


def _may_use_nccl(a: Analysis) -> bool:
    """The file starts a process group and names the "nccl" backend somewhere."""
    if "nccl" not in a.source or not any(a.call_named("torch.distributed.init_process_group")):
        return False
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and "nccl" in n.value
        for n in a.of_type(ast.Constant)
    )


def _imports_torch(a: Analysis) -> bool:
    return any(q == "torch" or q.startswith("torch.") for q in a.imports.values())


# A dotted name ("module.", "_orig_mod.", ".pt", "model.encoder"): the text of a prefix or a
# suffix, unlike the character sets strip is meant for ("\r\n", "0123456789", " []").
_AFFIX = re.compile(r"\.?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\.?")
_RUNS = (string.ascii_lowercase, string.ascii_uppercase, string.hexdigits)
_AFFIX_METHODS = {"lstrip": "removeprefix", "rstrip": "removesuffix"}


@detector(R.StripRemovesCharacters)
def strip_removes_characters(a: Analysis) -> Iterator[Finding]:
    if "strip(" not in a.source or not _imports_torch(a):
        return
    for call, func in a.method_calls("lstrip", "rstrip", "strip"):
        if len(call.args) != 1 or call.keywords:
            continue
        chars, literal = _string_value(a, call.args[0])
        if chars is None or not _looks_like_affix(chars):
            continue
        method = _AFFIX_METHODS.get(func.attr) or _strip_intent(chars)
        message = (
            f"`{a.name(call)}` strips any of the characters in {chars!r}, not that text"
            + _strip_example(func.attr, method, chars)
        )
        if method is None:
            yield R.StripRemovesCharacters.finding(
                message + "; use `removeprefix`/`removesuffix` or slicing",
                a.loc(call),
                Fix("use `removeprefix`/`removesuffix` or slicing"),
            )
            continue
        pandas = isinstance(func.value, ast.Attribute) and func.value.attr == "str"
        safe = literal and func.attr in _AFFIX_METHODS and not pandas
        line, end = a.end(func)
        rename = Edit(line, end - len(func.attr), line, end, method)
        yield R.StripRemovesCharacters.finding(
            message + f"; use `.{method}({a.text(call.args[0])})`",
            a.loc(call),
            Fix(f"use `.{method}()`", (rename,), Safety.SAFE if safe else Safety.UNSAFE),
        )


# names a state-dict key or a file name may go on with after a prefix, or start with before a
# suffix: one of them shows what strip takes away
_AFTER_PREFIX = ("embed.weight", "decoder.bias", "out.weight", "layer1.weight", "model.fc.bias")
_BEFORE_SUFFIX = ("checkpoint", "best_net", "weights", "output", "latest", "model")


def _strip_example(method: str, intent: str | None, chars: str) -> str:
    """``: "module.embed.weight" becomes "bed.weight"`` for the first name that shows it."""
    suffix = method == "rstrip" or (method == "strip" and intent == "removesuffix")
    if not (chars.startswith(".") if suffix else chars.endswith(".")):
        return ""  # "model" glued to a name reads as no key would
    for name in _BEFORE_SUFFIX if suffix else _AFTER_PREFIX:
        text = name + chars if suffix else chars + name
        stripped = getattr(text, method)(chars)
        if stripped != name:
            return f': "{text}" becomes "{stripped}"'
    return ""


def _string_value(a: Analysis, arg: ast.expr) -> tuple[str | None, bool]:
    """The text of a string literal (and True), or of the literal a name was last given."""
    literal = isinstance(arg, ast.Constant)
    if isinstance(arg, ast.Name):
        arg = assigned_value(a, arg, arg.lineno) or arg
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value, literal
    return None, literal


def _looks_like_affix(chars: str) -> bool:
    """A dotted name, or a lower-case word of four letters or more ("model": state-dict keys
    are lower-case), that is not a run of the alphabet or of digits ("abcdef", "0123456789"):
    those are character sets, as upper-case letters often are (units: "KMGT")."""
    if len(set(chars)) < 2 or not _AFFIX.fullmatch(chars):
        return False
    if any(chars in run for run in _RUNS):
        return False
    return "." in chars or (len(chars) >= 4 and chars.islower())


def _strip_intent(chars: str) -> str | None:
    """What ``strip(chars)`` was meant to remove: "module." is a prefix, ".pt" a suffix."""
    if chars.endswith(".") and not chars.startswith("."):
        return "removeprefix"
    if chars.startswith(".") and not chars.endswith("."):
        return "removesuffix"
    return None


@detector(R.GlobalRankAsDevice)
def global_rank_as_device(a: Analysis) -> Iterator[Finding]:
    if "get_rank" not in a.source and "RANK" not in a.source:
        return
    held = _held_by_key(a)
    lines: set[int] = set()  # `DDP(model.to(rank), device_ids=[rank])` is one mistake
    for where, index in _device_indices(a):
        if index.lineno in lines or not _is_global_rank(a, index, held):
            continue
        lines.add(index.lineno)
        yield R.GlobalRankAsDevice.finding(
            f"`{a.name(where)}` takes the CUDA device index from the global rank "
            f"(`{a.name(index)}`): on every node after the first it is past the node's GPUs "
            '("invalid device ordinal"); use `int(os.environ["LOCAL_RANK"])`',
            a.loc(where if isinstance(where, ast.JoinedStr) else index),
            Fix('take the device index from `int(os.environ["LOCAL_RANK"])`'),
        )


def _device_indices(a: Analysis) -> Iterator[tuple[ast.AST, ast.expr]]:
    """Each expression used as a CUDA device index, with the call, keyword (``device_ids=``)
    or f-string that uses it."""
    for call in a.calls:
        q = a.qualname(call.func)
        func = call.func
        if q == "torch.device":
            yield from ((call, arg) for arg in call.args[1:2] or call.args[:1])
            yield from ((call, k) for k in [keyword(call, "index")] if k is not None)
        elif q in ("torch.cuda.set_device", "torch.cuda.device") or (
            q is None and isinstance(func, ast.Attribute) and func.attr in ("to", "cuda")
        ):
            arg = call.args[0] if call.args else keyword(call, "device")
            if arg is not None:
                yield call, arg
        elif q == _DDP:
            for kw in call.keywords:
                if kw.arg == "output_device":
                    yield kw, kw.value
                elif kw.arg == "device_ids" and isinstance(kw.value, ast.List | ast.Tuple):
                    yield from ((kw, elt) for elt in kw.value.elts)
    for node in a.of_type(ast.JoinedStr):
        assert isinstance(node, ast.JoinedStr)
        parts = node.values
        if len(parts) != 2 or not isinstance(parts[1], ast.FormattedValue):
            continue
        if isinstance(parts[0], ast.Constant) and parts[0].value == "cuda:":
            yield node, parts[1].value


def _key(node: ast.expr) -> str | None:
    """``rank``, ``self.rank``, ``cfg["rank"]``: one text for every spelling of a place."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _key(node.value)
        return None if base is None else f"{base}.{node.attr}"
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = _key(node.value)
        return None if base is None else f"{base}[{node.slice.value!r}]"
    return None


def _held_by_key(a: Analysis) -> dict[str, list[ast.expr | None]]:
    """What each attribute or subscript (``self.rank``, ``cfg["rank"]``) is assigned in the
    file; None for an update (``+=``) whose value is not followed."""
    out: dict[str, list[ast.expr | None]] = {}
    for node in a.of_type(ast.Assign, ast.AugAssign, ast.AnnAssign):
        assert isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value if isinstance(node, ast.Assign) else None
        for target in targets:
            key = None if isinstance(target, ast.Name) else _key(target)
            if key is not None:
                out.setdefault(key, []).append(value)
    return out


def _is_global_rank(
    a: Analysis, expr: ast.expr, held: dict[str, list[ast.expr | None]], depth: int = 0
) -> bool:
    """``dist.get_rank()``, ``int(os.environ["RANK"])``, or a place that only ever holds it."""
    if isinstance(expr, ast.Call):
        if a.qualname(expr.func) == "torch.distributed.get_rank":
            return True
        func = expr.func
        is_int = isinstance(func, ast.Name) and func.id == "int" and len(expr.args) == 1
        return is_int and _reads_rank_variable(a, expr.args[0])
    if depth > 2:
        return False
    values = _values_of(a, expr, held)
    return bool(values) and all(
        v is not None and _is_global_rank(a, v, held, depth + 1) for v in values
    )


def _reads_rank_variable(a: Analysis, node: ast.expr) -> bool:
    """``os.environ["RANK"]``, ``os.environ.get("RANK", ...)``, ``os.getenv("RANK", ...)``."""
    if isinstance(node, ast.Subscript):
        name, env = node.slice, node.value
    elif isinstance(node, ast.Call) and node.args:
        name, env = node.args[0], node.func
        if a.qualname(env) not in ("os.environ.get", "os.getenv"):
            return False
    else:
        return False
    return isinstance(name, ast.Constant) and name.value == "RANK" and a.qualname(env) is not None


def _values_of(
    a: Analysis, expr: ast.expr, held: dict[str, list[ast.expr | None]]
) -> list[ast.expr | None]:
    """The values ``expr`` may hold: a local name's last assignment above it, a global
    assigned once, every assignment of an attribute or subscript."""
    if not isinstance(expr, ast.Name):
        key = _key(expr)
        return [] if key is None else held.get(key, [])
    value = assigned_value(a, expr, expr.lineno)
    if value is not None:
        return [value]
    owner = a.function_of(expr)
    if owner is not None and _binds(owner, expr.id):
        return []  # a parameter, a loop variable...: not followed
    found = a.assignments(a.tree).get(expr.id, [])
    return [found[0][1]] if len(found) == 1 else []


def _binds(func: Func, name: str) -> bool:
    args = func.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    if any(p is not None and p.arg == name for p in params):
        return True
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in walk_local(func)
    )


_WRAPPERS = ("torch.nn.DataParallel", _DDP)


@detector(R.WrappedStateDictSaved)
def wrapped_state_dict_saved(a: Analysis) -> Iterator[Finding]:
    if "state_dict" not in a.source or _renames_keys(a):
        return
    wraps = _wraps(a)
    if not wraps:
        return
    for call in a.call_named("torch.save"):
        if not call.args:
            continue
        for model in _saved_state_dicts(a, call):
            wrap = _wrapped_at_save(a, model, call, wraps)
            if wrap is None or _reloaded_into_wrapper(a, model, wraps):
                continue
            yield R.WrappedStateDictSaved.finding(
                f"`{a.name(model)}` is wrapped in `{_wrapper_name(a, wrap)}` (line "
                f"{wrap.lineno}): the keys of its state dict start with `module.` and do not "
                f"load into the bare model; save `{a.name(model)}.module.state_dict()`",
                a.loc(model),
                Fix(f"save `{a.name(model)}.module.state_dict()`"),
                related=(a.loc(wrap),),
            )


def _renames_keys(a: Analysis) -> bool:
    """The file deals with the prefix itself (``k.replace("module.", "")``...): it saves
    wrapped state dicts on purpose."""
    return "module." in a.source and any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("module.")
        for n in a.of_type(ast.Constant)
    )


def _unmoved(value: ast.expr) -> ast.expr:
    """``DataParallel(m)`` for ``DataParallel(m).to(device)`` or ``.cuda()``."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("to", "cuda")
        and isinstance(value.func.value, ast.Call)
    ):
        value = value.func.value
    return value


def _wrapper_name(a: Analysis, wrap: ast.Assign) -> str:
    value = _unmoved(wrap.value)
    called = a.qualname(value.func) if isinstance(value, ast.Call) else None
    return (called or "DataParallel").rsplit(".", 1)[-1]


def _is_wrapper(a: Analysis, value: ast.expr) -> bool:
    value = _unmoved(value)
    return isinstance(value, ast.Call) and a.qualname(value.func) in _WRAPPERS


def _wraps(a: Analysis) -> dict[str, list[ast.Assign]]:
    """``model = DataParallel(model)``, ``self.net = DDP(...)``: by the name or ``self.attr``."""
    out: dict[str, list[ast.Assign]] = {}
    for call in a.call_named(*_WRAPPERS):
        stmt = a.parents.get(call)
        while isinstance(stmt, ast.Attribute | ast.Call):
            stmt = a.parents.get(stmt)  # through `.to(device)`
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        key = _model_key(stmt.targets[0])
        if key is not None and _is_wrapper(a, stmt.value):
            out.setdefault(key, []).append(stmt)
    return out


def _model_key(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"self.{node.attr}" if node.value.id == "self" else None
    return node.id if isinstance(node, ast.Name) else None


def _saved_state_dicts(a: Analysis, save: ast.Call) -> Iterable[ast.expr]:
    """``m`` for each ``m.state_dict()`` in what ``save`` writes (a dict of them included, or
    the name such a dict was assigned to above)."""
    saved = save.args[0]
    roots = [saved]
    if isinstance(saved, ast.Name):
        value = assigned_value(a, saved, save.lineno)
        roots += [value] if value is not None else []
    for root in roots:
        for node in ast.walk(root):
            if isinstance(node, ast.Call) and not node.args and not node.keywords:
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr == "state_dict":
                    yield func.value


def _wrapped_at_save(
    a: Analysis, model: ast.expr, save: ast.Call, wraps: dict[str, list[ast.Assign]]
) -> ast.Assign | None:
    """The wrapping that ``model`` holds where ``save`` runs: made above it in the same
    function, in a method of the same class (``self.net``), or, for a parameter, by the
    name that every caller in the file passes."""
    key = _model_key(model)
    found = wraps.get(key or "")
    if key is None or not found:
        return None
    owner = a.function_of(save)
    if key.startswith("self."):
        cls = a.class_of(owner) if owner is not None else None
        return next(
            (w for w in found if cls is not None and a.class_of(a.function_of(w) or w) is cls), None
        )
    assert isinstance(model, ast.Name)
    last = assigned_value(a, model, save.lineno)
    if last is not None:
        here = [w for w in found if w.value is last]
        return here[0] if here else None
    if owner is None or not _passed_wrapped(a, owner, key, wraps):
        return None
    return found[0]


def _passed_wrapped(
    a: Analysis, func: Func, param: str, wraps: dict[str, list[ast.Assign]]
) -> bool:
    """``param`` of ``func`` is never rebound there and every call of ``func`` in the file
    passes it a name that the file wraps (there is at least one call)."""
    names = [arg.arg for arg in func.args.args]
    if param not in names or a.functions.get(func.name) is not func:
        return False
    if any(
        isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Store)
        for n in walk_local(func)
    ):
        return False
    index = names.index(param)
    passed = []
    for call in a.calls:
        if isinstance(call.func, ast.Name) and call.func.id == func.name:
            arg = keyword(call, param) or (call.args[index] if index < len(call.args) else None)
            passed.append(arg)
    return bool(passed) and all(isinstance(p, ast.Name) and p.id in wraps for p in passed)


def _reloaded_into_wrapper(
    a: Analysis, model: ast.expr, wraps: dict[str, list[ast.Assign]]
) -> bool:
    """The file loads state dicts into the wrapper itself (a resume): wrapped keys are what
    it reads back."""
    key = _model_key(model)
    for call, func in a.method_calls("load_state_dict"):
        if _model_key(func.value) != key or key is None:
            continue
        owner = a.function_of(call)
        if any(a.function_of(w) is owner and w.lineno < call.lineno for w in wraps[key]):
            return True
    return False
