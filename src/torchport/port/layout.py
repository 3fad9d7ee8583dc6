"""Where added code goes in a module: imports after the imports, blank lines as ruff wants."""

from __future__ import annotations

import libcst as cst

from torchport.port.snippets import Statement


def ensure_imports(module: cst.Module, lines: list[str]) -> cst.Module:
    """``module`` with each import statement in ``lines`` added after its imports if missing."""
    present = {
        cst.Module(body=[]).code_for_node(s).strip()
        for s in module.body
        if isinstance(s, cst.SimpleStatementLine)
    }
    missing = [line for line in lines if line not in present]
    if not missing:
        return module
    body = list(module.body)
    index = _after_imports(body)
    added = [cst.parse_statement(line) for line in missing]
    return module.with_changes(body=[*body[:index], *added, *body[index:]])


def insert_after_imports(module: cst.Module, added: list[Statement]) -> cst.Module:
    """``module`` with ``added`` placed after its leading imports, blank lines as ruff wants."""
    if not added:
        return module
    body = list(module.body)
    index = _after_imports(body)
    spaced = [_with_blank_lines(s, 2 if _is_def(s) else 1) for s in added]
    spaced[0] = _with_blank_lines(added[0], 2 if _is_def(added[0]) else 1)
    if index < len(body):
        body[index] = _with_blank_lines(body[index], 2, at_least=True)
    return module.with_changes(body=[*body[:index], *spaced, *body[index:]])


def _is_def(statement: Statement) -> bool:
    return isinstance(statement, (cst.FunctionDef, cst.ClassDef))


def _after_imports(body: list[Statement]) -> int:
    index = 0
    for i, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine):
            if any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body):
                index = i + 1
            elif i == 0 and isinstance(statement.body[0], cst.Expr):
                index = 1  # the module docstring
        else:
            break
    return index


def _with_blank_lines(statement: Statement, count: int, at_least: bool = False) -> Statement:
    lines = list(statement.leading_lines)
    blanks = 0
    while blanks < len(lines) and lines[blanks].comment is None:
        blanks += 1
    if at_least and blanks >= count:
        return statement
    rest = lines[blanks:]
    return statement.with_changes(leading_lines=[cst.EmptyLine()] * count + rest)
