"""Static detectors of distributed evaluation metrics: one computed on one process's shard of
a split loader and returned without a collective (TP414), and one summed over a sampler that
pads the dataset with repeats (TP420)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze.checks.base import Analysis, detector, last_name
from torchport.analyze.checks.values import assigned_name, assigned_value, is_parameter
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


_ALL_REDUCE = "torch.distributed.all_reduce"
# Losses whose default reduction is the mean over the batch.
_MEAN_LOSSES = frozenset(
    {
        "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
        "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    }
)  # fmt: skip
# Calls that keep the value they are made on (or given): a copy, a detach, a cast.
_KEEPING = frozenset({"clone", "detach", "float", "double", "to", "tensor", "as_tensor", "cuda"})
_DIVIDING = frozenset({"div", "div_", "divide", "true_divide", "mul_"})


@detector(R.SummedMeanNotAveraged)
def summed_mean_not_averaged(a: Analysis) -> Iterator[Finding]:
    if "all_reduce" not in a.source:
        return
    for call in a.call_named(_ALL_REDUCE):
        target = call.args[0] if call.args else keyword(call, "tensor")
        owner = a.function_of(call)
        if not isinstance(target, ast.Name) or owner is None or not _sums(a, call):
            continue
        if _divided_after(owner, target.id, call.lineno):
            continue
        origin = _origin(a, target, call.lineno)
        if origin is not None and _a_mean(a, origin):
            yield _summed_mean(a, call, call, origin)
            continue
        if not (isinstance(origin, ast.Name) and is_parameter(owner, origin.id)):
            continue
        back = next(
            (
                n
                for n in walk_local(owner)
                if isinstance(n, ast.Return)
                and isinstance(n.value, ast.Name)
                and n.value.id == target.id
                and n.lineno > call.lineno
            ),
            None,
        )
        given = _given_a_mean(a, owner, origin.id) if back is not None else None
        if back is not None and given is not None:
            yield _summed_mean(a, back, call, given)


def _summed_mean(a: Analysis, at: ast.AST, call: ast.Call, mean: ast.expr) -> Finding:
    return R.SummedMeanNotAveraged.finding(
        f"`{a.name(call)}` sums `{a.name(mean)}` over the processes and nothing divides it by "
        "their number: the result is the world size times the mean",
        a.loc(at),
        Fix("all_reduce with op=dist.ReduceOp.AVG, or divide by dist.get_world_size()"),
        related=tuple(a.loc(n) for n in (call, mean) if n is not at),
    )


def _sums(a: Analysis, call: ast.Call) -> bool:
    """Whether the all_reduce sums: no ``op``, or ``ReduceOp.SUM``."""
    op = keyword(call, "op") or (call.args[1] if len(call.args) > 1 else None)
    return op is None or (isinstance(op, ast.Attribute) and op.attr == "SUM")


def _divided_after(owner: Func, name: str, line: int) -> bool:
    """Whether ``owner`` divides what ``name`` holds at or after ``line`` (``name /
    world_size``, ``name /= n``, ``name.div_(n)``, ``name.item() / n``)."""
    for node in walk_local(owner):
        if getattr(node, "lineno", 0) < line:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.FloorDiv):
            divided: ast.AST = node.left
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div | ast.FloorDiv):
            divided = node.target
        elif isinstance(node, ast.Call) and last_name(node.func) in _DIVIDING:
            divided = node.func
        else:
            continue
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(divided)):
            return True
    return False


def _origin(a: Analysis, value: ast.expr, line: int, depth: int = 3) -> ast.expr | None:
    """What ``value`` copies, through ``.clone()``, ``.detach()``, casts, ``torch.tensor(...)``
    and the last plain assignment above ``line`` of a name; a name assigned nothing (a
    parameter) is itself."""
    while isinstance(value, ast.Call) and last_name(value.func) in _KEEPING:
        func = value.func
        if isinstance(func, ast.Attribute) and not (
            isinstance(func.value, ast.Name) and func.value.id == "torch"
        ):
            value = func.value
        elif value.args:
            value = value.args[0]
        else:
            return None
    if not isinstance(value, ast.Name) or depth == 0:
        return value
    assigned = assigned_value(a, value, line)
    return value if assigned is None else _origin(a, assigned, line, depth - 1)


def _a_mean(a: Analysis, value: ast.expr) -> bool:
    """A mean, a ratio or a mean loss that each process computes for itself; a ratio whose
    divisor names the world size is already a share of the sum."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div):
        return not any(w in a.text(value.right).lower() for w in ("world", "size", "gpu", "proc"))
    if not isinstance(value, ast.Call):
        return False
    name = last_name(value.func)
    if name == "mean":
        return True
    if name in _MEAN_LOSSES or any(w in (name or "").lower() for w in ("criterion", "loss")):
        reduction = keyword(value, "reduction")
        return not (isinstance(reduction, ast.Constant) and reduction.value != "mean")
    return False


def _given_a_mean(a: Analysis, helper: Func, param: str) -> ast.expr | None:
    """A mean a same-file call hands ``helper`` as ``param``, where the caller does not
    divide what the helper returns (nor its own callers, when it returns that)."""
    for call, given in a.given_by_call(helper, param):
        value = _origin(a, given, call.lineno) if given is not None else None
        if value is None or not _a_mean(a, value) or _result_divided(a, call, 1):
            continue
        return value
    return None


def _result_divided(a: Analysis, call: ast.Call, depth: int) -> bool:
    """Whether what ``call`` returns gets divided: at once, through the name it is assigned
    to, or (``depth`` levels up) by the callers of a function that returns it."""
    parent = a.parents.get(call)
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div) and parent.left is call:
        return True
    owner = a.function_of(call)
    name = assigned_name(a, call)
    if owner is not None and name is not None:
        return _divided_after(owner, name.id, call.lineno)
    if isinstance(parent, ast.Return) and owner is not None and depth > 0:
        callers = a.calls_of(owner)
        return not callers or any(_result_divided(a, c, depth - 1) for c in callers)
    return False
