"""Static detectors of distributed evaluation metrics: one computed on one process's shard of
a split loader and returned without a collective (TP414), and one summed over a sampler that
pads the dataset with repeats (TP420)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze.checks.base import Analysis, detector, last_name
from torchport.analyze.checks.values import assigned_name, assigned_value
from torchport.analyze.context import Func, walk_local
from torchport.analyze.infer import keyword
from torchport.findings import Finding, Fix
from torchport.rules import distributed as R

_DDP = "torch.nn.parallel.DistributedDataParallel"
_SAMPLER = "torch.utils.data.DistributedSampler"
# Calls that combine the processes' numbers (or their data) before the ratio is taken.
_COMBINING = frozenset(
    {
        "all_reduce", "all_gather", "all_gather_object", "all_gather_into_tensor", "reduce",
        "gather", "gather_object", "reduce_scatter", "get_world_size", "sync", "compute",
    }
)  # fmt: skip


@detector(R.ShardMetricNotReduced)
def shard_metric_not_reduced(a: Analysis) -> Iterator[Finding]:
    if "DistributedSampler" not in a.source and "rank" not in a.source:
        return
    if not any(a.call_named(_DDP, _INIT)):
        return
    for func, loader in _evaluations_of_shards(a):
        counted = _accumulated(func)
        for ratio in _returned_ratios(a, func, counted):
            yield R.ShardMetricNotReduced.finding(
                f"`{a.name(ratio)}` is this process's share only: `{a.name(loader)}` is "
                "split across the processes and no collective combines the counts; "
                "all_reduce them before dividing",
                a.loc(ratio),
                Fix("dist.all_reduce a tensor of the counts (sum) before taking the ratio"),
                related=(a.loc(loader),),
            )


_INIT = "torch.distributed.init_process_group"


def _returned_ratios(a: Analysis, func: Func, counted: set[str]) -> Iterator[ast.expr]:
    """Ratios of the counts that ``func`` returns: written in the ``return``, or assigned to
    a name the ``return`` holds (``recall = tp / n_gt``; ``return {"recall": recall}``)."""
    for ret in (n for n in walk_local(func) if isinstance(n, ast.Return)):
        if ret.value is None:
            continue
        if _ratio_of(ret.value, counted):
            yield ret.value
            continue
        for name in (n for n in ast.walk(ret.value) if isinstance(n, ast.Name)):
            value = assigned_value(a, name, ret.lineno)
            if value is not None and _ratio_of(value, counted):
                yield value


def _evaluations_of_shards(a: Analysis) -> Iterator[tuple[Func, ast.expr]]:
    """Same-file functions that evaluate (loop over batches, no backward, no collective) and
    are handed a split loader at some call, with that argument."""
    for call in a.calls:
        func = a.own_callee(call)
        if func is None or not _evaluates(a, func):
            continue
        for arg in call.args:
            if isinstance(arg, ast.Name) and _split_loader(a, arg, call.lineno):
                yield func, arg
                break


# Also tensor methods (`scores.gather(1, idx)`): a collective only as torch.distributed's.
_TENSOR_METHODS_TOO = frozenset({"gather", "reduce"})


def _evaluates(a: Analysis, func: Func) -> bool:
    calls = [n for n in walk_local(func) if isinstance(n, ast.Call)]
    names = {last_name(c.func) for c in calls}
    combines = any(
        last_name(c.func) in _COMBINING
        and (
            last_name(c.func) not in _TENSOR_METHODS_TOO
            or (a.qualname(c.func) or "").startswith("torch.distributed.")
        )
        for c in calls
    )
    loops = any(isinstance(n, ast.For) for n in walk_local(func))
    return loops and "backward" not in names and not combines


def _split_loader(a: Analysis, name: ast.Name, line: int, depth: int = 2) -> bool:
    """``name`` holds a DataLoader over a rank's part: ``sampler=DistributedSampler(...)``, a
    ``Subset(..., range(rank, n, world))``, or what a same-file function making one returns;
    a parameter every caller hands one (``train(model, train_loader, val_loader)``)."""
    made = assigned_value(a, name, line)
    if made is None:
        made = _unpacked_from(a, name, line)
    if made is None and depth > 0:
        owner = a.function_of(name)
        given = a.given(owner, name.id) if owner is not None else []
        return bool(given) and all(
            isinstance(g, ast.Name) and _split_loader(a, g, g.lineno, depth - 1) for g in given
        )
    if not isinstance(made, ast.Call):
        return False
    if a.qualname(made.func) == "torch.utils.data.DataLoader":
        sampler = keyword(made, "sampler")
        if isinstance(sampler, ast.Name):
            sampler = assigned_value(a, sampler, made.lineno)
        # `DistributedSampler(ds) if distributed else None`: split where it runs distributed
        arms = [sampler.body, sampler.orelse] if isinstance(sampler, ast.IfExp) else [sampler]
        if any(isinstance(s, ast.Call) and a.qualname(s.func) == _SAMPLER for s in arms):
            return True
        dataset = made.args[0] if made.args else keyword(made, "dataset")
        return dataset is not None and "rank" in a.text(dataset)
    helper = a.own_callee(made)
    return helper is not None and any(
        isinstance(n, ast.Call) and a.qualname(n.func) == _SAMPLER for n in walk_local(helper)
    )


def _unpacked_from(a: Analysis, name: ast.Name, line: int) -> ast.expr | None:
    """``loader, sampler = make_loader(...)``: the call a tuple target takes ``name`` from."""
    owner = a.function_of(name) or a.tree
    found = None
    for node in walk_local(owner):
        if isinstance(node, ast.Assign) and node.lineno <= line and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Tuple) and any(
                isinstance(e, ast.Name) and e.id == name.id for e in target.elts
            ):
                found = node.value
    return found


def _accumulated(func: Func) -> set[str]:
    """Names a loop adds to (``correct += ...``)."""
    return {
        n.target.id
        for n in walk_local(func)
        if isinstance(n, ast.AugAssign)
        and isinstance(n.op, ast.Add)
        and isinstance(n.target, ast.Name)
    }


def _ratio_of(value: ast.expr, counted: set[str]) -> bool:
    """A division whose two sides read accumulated counts (``100.0 * correct / total``)."""
    for node in ast.walk(value):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            sides = [
                {n.id for n in ast.walk(side) if isinstance(n, ast.Name)}
                for side in (node.left, node.right)
            ]
            if all(side & counted for side in sides):
                return True
    return False


_SUMMING = frozenset({"all_reduce", "reduce"})


@detector(R.PaddedEvaluationSampler)
def padded_evaluation_sampler(a: Analysis) -> Iterator[Finding]:
    if "DistributedSampler" not in a.source:
        return
    for sampler in a.call_named(_SAMPLER):
        shuffle, drop_last = keyword(sampler, "shuffle"), keyword(sampler, "drop_last")
        if not (isinstance(shuffle, ast.Constant) and shuffle.value is False):
            continue  # a training sampler (shuffled): its repeats are just more samples
        if isinstance(drop_last, ast.Constant) and drop_last.value is True:
            continue  # drops the remainder instead of padding
        owner = a.function_of(sampler)
        name = assigned_name(a, sampler)
        if owner is None or name is None or not _evaluates_with(a, owner, name.id):
            continue
        summed = next(
            (
                n
                for n in walk_local(owner)
                if isinstance(n, ast.Call)
                and last_name(n.func) in _SUMMING
                and n.lineno > sampler.lineno
            ),
            None,
        )
        if summed is None:
            continue
        yield R.PaddedEvaluationSampler.finding(
            f"`{a.name(sampler)}` pads the dataset with repeated samples up to a multiple of "
            f"the number of processes, and `{a.name(summed)}` (line {summed.lineno}) sums "
            "what every process counted: the repeats are counted twice unless the size "
            "divides evenly",
            a.loc(sampler),
            Fix(
                "give each process rank::world_size of the indices (Subset), or drop the "
                "padded samples before reducing"
            ),
            related=(a.loc(summed),),
        )


def _evaluates_with(a: Analysis, owner: Func, sampler: str) -> bool:
    """A loop of ``owner`` over a DataLoader given ``sampler=<sampler>``, with no backward."""
    for loop in walk_local(owner):
        if not isinstance(loop, ast.For):
            continue
        loader: ast.expr | None = loop.iter
        if isinstance(loader, ast.Call) and last_name(loader.func) == "enumerate" and loader.args:
            loader = loader.args[0]
        if isinstance(loader, ast.Name):
            loader = assigned_value(a, loader, loop.lineno)
        if not isinstance(loader, ast.Call) or last_name(loader.func) != "DataLoader":
            continue
        given = keyword(loader, "sampler")
        if not (isinstance(given, ast.Name) and given.id == sampler):
            continue
        backward = any(
            isinstance(n, ast.Call) and last_name(n.func) == "backward" for n in ast.walk(loop)
        )
        if not backward:
            return True
    return False
