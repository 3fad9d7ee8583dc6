"""``--amp bf16``: autocast around the forward pass and the loss of a training step."""

from __future__ import annotations

import libcst as cst

from torchport.port import snippets
from torchport.port.snippets import Statement

AUTOCAST = "torch.autocast(device_type={device}.type, dtype=torch.bfloat16)"


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _calls_model(statement: cst.BaseStatement, models: set[str]) -> bool:
    code = _code(statement)
    return any(f"{m}(" in code for m in models)


def wrap_autocast(body: list[Statement], models: set[str], device: str) -> list[Statement]:
    """``body`` with the statements from the first model call up to ``backward()`` autocast.

    Only a step made of simple statements is wrapped (a ``with`` around control flow could
    change what runs under autocast); ``backward()`` itself stays outside, as it must.
    """
    if any("autocast" in _code(s) for s in body):
        return body
    backward = next((i for i, s in enumerate(body) if ".backward(" in _code(s)), None)
    first = next((i for i, s in enumerate(body) if _calls_model(s, models)), None)
    if backward is None or first is None or first >= backward:
        return body
    step = body[first:backward]
    if not all(isinstance(s, cst.SimpleStatementLine) for s in step):
        return body
    header = snippets.statements(f"with {AUTOCAST.format(device=device)}:\n    pass\n")[0]
    assert isinstance(header, cst.With)
    leading = step[0].leading_lines
    step[0] = step[0].with_changes(leading_lines=())
    wrapped = header.with_changes(body=header.body.with_changes(body=step), leading_lines=leading)
    return [*body[:first], wrapped, *body[backward:]]
