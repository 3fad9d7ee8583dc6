"""Static detector of a training checkpoint that leaves the GradScaler's state out (TP319)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.checks.values import assigned_value
from torchport.analyze.context import walk_local
from torchport.findings import Finding, Fix
from torchport.rules import amp as R


@detector(R.CheckpointWithoutScalerState)
def checkpoint_without_scaler_state(a: Analysis) -> Iterator[Finding]:
    # A file that saves the scaler's state anywhere (or loads one) is taken to resume it.
    if not a.makes_scaler or _mentions_scaler_state(a):
        return
    for save in a.call_named("torch.save"):
        checkpoint = _saved_dict(a, save)
        if checkpoint is None or not any(_optimizer_state(a, v) for v in checkpoint.values):
            continue
        yield R.CheckpointWithoutScalerState.finding(
            "this checkpoint saves the optimizer's state but not the GradScaler's: a resumed "
            "run starts again from the initial loss scale (65536) and skips steps until it "
            'adapts; add `"scaler": scaler.state_dict()` and load it on resume',
            a.loc(checkpoint),
            Fix("save scaler.state_dict() beside the optimizer's and load it on resume"),
            related=(a.loc(save),) if save.lineno != checkpoint.lineno else (),
        )


def _mentions_scaler_state(a: Analysis) -> bool:
    for call in a.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("state_dict", "load_state_dict"):
            info = a.info(func.value)
            if (info is not None and info.kind == K.SCALER) or "scaler" in a.text(func.value):
                return True
    return False


def _saved_dict(a: Analysis, save: ast.Call) -> ast.Dict | None:
    """The dict literal ``torch.save`` writes: its argument, or what that name was bound to."""
    value = save.args[0] if save.args else None
    if isinstance(value, ast.Name):
        value = assigned_value(a, value, save.lineno)
    if isinstance(value, ast.Call):  # `torch.save(self.state_dict(), path)`: the dict it returns
        helper = a.own_callee(value)
        returned = (
            [n.value for n in walk_local(helper) if isinstance(n, ast.Return)]
            if helper is not None
            else []
        )
        value = returned[0] if len(returned) == 1 else None
    if isinstance(value, ast.Dict) and None not in value.keys:  # no ``**other`` to look into
        return value
    return None


def _optimizer_state(a: Analysis, value: ast.expr) -> bool:
    """``optimizer.state_dict()`` of an evident optimizer."""
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "state_dict"
    ):
        return False
    info = a.info(value.func.value)
    return (info is not None and info.kind == K.OPTIMIZER) or "optim" in a.text(value.func.value)
