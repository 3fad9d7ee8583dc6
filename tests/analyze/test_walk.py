"""The fast tree walk visits exactly what ``ast.walk`` does, less the context and operator
markers, in source order, with every parent right."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from torchport.analyze.walk import children, descendants, walk

MARKERS = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)

EVERY_SHAPE = """
import torch, torch.nn as nn
from torch import optim as o
@decorator(arg=1)
async def f(a, /, b: int = 2, *args, c, d=None, **kw) -> "T":
    global g
    async with torch.no_grad() as x, open(p):
        async for i in aiter():
            y = [j ** 2 for j in range(i) if j if not j] + {k: v for k, v in d.items()}
            z = {*a, *b} | {q for q in a}
            w = (lambda p, *, r=1: p @ r)(1)
            v = f"{a!r:>{b}} {c=}"
            s = a[1:2, ::3, ...]
            t = -a if a and b or not c else ~b
            u = a < b <= c is not d in e
            yield from gen()
            await thing
            del a[0], b.c
    try:
        raise ValueError("x") from None
    except (TypeError, ValueError) as err:
        pass
    else:
        assert a, "msg"
    finally:
        nonlocal_ = {**kw, "k": 1}
    match command:
        case {"x": 1, **rest}:
            pass
        case Point(x=0, y=yy) | [1, 2, *others] if yy > 0:
            pass
        case str() as name:
            pass
    return a
class C(Base, metaclass=Meta):
    attr: int = 3
    a = b = c
    x += 1
"""


def _reference(tree: ast.AST) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if not isinstance(n, MARKERS)]


def _sources() -> list[str]:
    here = Path(__file__).resolve().parents[2] / "src" / "torchport"
    found = [EVERY_SHAPE]
    if sys.version_info >= (3, 12):
        found.append("type Alias[T] = list[T]\ndef g[T: int, *Ts, **P](x: T) -> T: ...\n")
    found += [p.read_text() for p in sorted(here.rglob("*.py"))[:40]]
    return found


@pytest.mark.parametrize("source", _sources(), ids=lambda s: s.split("\n", 2)[1][:30])
def test_walk_visits_what_ast_walk_does_without_markers_and_records_each_parent(
    source: str,
) -> None:
    tree = ast.parse(source)
    parents: dict[ast.AST, ast.AST] = {}
    by_type = walk(tree, parents)
    visited = [n for nodes in by_type.values() for n in nodes]
    assert {id(n) for n in visited} == {id(n) for n in _reference(tree)}
    assert len(visited) == len(_reference(tree))
    assert all(type(n) is cls for cls, nodes in by_type.items() for n in nodes)
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, MARKERS):
                assert parents[child] is node
    in_order = list(descendants(tree))
    assert {id(n) for n in in_order} == {id(n) for n in visited}
    for cls, nodes in by_type.items():  # each type's list keeps the walk's (source) order
        assert [id(n) for n in in_order if type(n) is cls] == [id(n) for n in nodes]


def test_walk_goes_in_source_order() -> None:
    tree = ast.parse("a = f(b, c=d)\ng(e)[h]\n")
    assert [type(n).__name__ for n in descendants(tree)][:4] == ["Module", "Assign", "Name", "Call"]
    names = [n.id for n in walk(tree, {})[ast.Name]]  # type: ignore[attr-defined]
    assert names == ["a", "f", "b", "d", "g", "e", "h"]


def test_children_are_the_direct_children_in_order() -> None:
    call = ast.parse("f(a, *b, k=c)").body[0].value  # type: ignore[attr-defined]
    kinds = [type(n).__name__ for n in children(call)]
    assert kinds == ["Name", "Name", "Starred", "keyword"]
