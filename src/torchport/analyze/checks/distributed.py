"""Static detectors of multi-GPU and distributed mistakes (TP4xx)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze.checks.base import Analysis, detector
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
    if not a.uses_accelerator or "set_device" in a.source:
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


@detector(R.SamplerWithoutSetEpoch)
def sampler_without_set_epoch(a: Analysis) -> Iterator[Finding]:
    if "set_epoch" in a.source:
        return
    for call in a.call_named("torch.utils.data.DistributedSampler"):
        shuffle = keyword(call, "shuffle")
        if isinstance(shuffle, ast.Constant) and shuffle.value is False:
            continue
        yield R.SamplerWithoutSetEpoch.finding(
            f"`{a.name(call)}` shuffles with a seed based on the epoch, but the script never "
            "calls `set_epoch`: every epoch sees the same order; call "
            "`sampler.set_epoch(epoch)` at the start of each epoch",
            a.loc(call),
            Fix("call `sampler.set_epoch(epoch)` each epoch"),
        )


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
    # is where an unguarded save runs on every rank.
    distributed = {
        a.function_of(c) for c in a.call_named("torch.distributed.init_process_group", _DDP)
    }
    for call in a.call_named("torch.save"):
        if a.function_of(call) not in distributed:
            continue
        if any(_is_guard(a, up) for up in a.ancestors(call)):
            continue
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
