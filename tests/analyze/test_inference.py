"""What the analysis knows about names, and where it draws the hot loop."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchport.analyze import kinds as K
from torchport.analyze.checks import Analysis

SOURCE = textwrap.dedent(
    """
    import numpy as np
    import torch as T
    from torch import nn
    from torch.utils.data import DataLoader


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
            self.table = T.zeros(3)

        def forward(self, x: T.Tensor):
            return self.fc(x)


    def make_batch():
        return T.randn(2, 4)


    def train(loader: DataLoader, device):
        model = Net()
        model.to(device)
        data = np.random.rand(3)
        batch = make_batch()
        moved = batch.to(device)
        for step, (x, y) in enumerate(loader):
            out = model(x)
            out.sum().backward()
        print("done")
    """
)


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    return Analysis(SOURCE, "t.py")


def _expr(a: Analysis, text: str, line_of: str) -> ast.expr:
    """The expression ``text`` as it appears on the line containing ``line_of``."""
    number = next(i for i, line in enumerate(a.lines, start=1) if line_of in line)
    for node in ast.walk(a.tree):
        on_line = isinstance(node, ast.expr) and getattr(node, "lineno", 0) == number
        if on_line and a.text(node) == text:
            assert isinstance(node, ast.expr)
            return node
    raise AssertionError(f"{text!r} not found on line {number}")


@pytest.mark.parametrize(
    ("text", "line", "kind", "device"),
    [
        ("model", "out = model(x)", K.MODULE, "accel"),  # moved in place by model.to(device)
        ("batch", "moved = batch.to", K.TENSOR, "cpu"),  # same-file function's return value
        ("moved", "moved = batch.to", None, None),  # not bound yet on its own line
        ("x", "out = model(x)", K.TENSOR, "cpu"),  # enumerate(loader) batch
        ("loader", "enumerate(loader)", K.LOADER, None),  # annotation
        ("out", "out.sum()", K.TENSOR, "accel"),  # output of a moved model
        ("self.fc", "return self.fc(x)", K.MODULE, "cpu"),  # self attribute set in __init__
        ("self.table", "self.table = T.zeros", K.TENSOR, "cpu"),
        ("x", "return self.fc(x)", K.TENSOR, None),  # annotated with the T alias
    ],
)
def test_names_get_their_kind_and_device(
    analysis: Analysis, text: str, line: str, kind: str | None, device: str | None
) -> None:
    info = analysis.info(_expr(analysis, text, line))
    if kind is None:
        assert info is None
        return
    assert info is not None and info.kind == kind and info.device == device


def test_numpy_default_dtype_is_float64(analysis: Analysis) -> None:
    info = analysis.info(_expr(analysis, "np.random.rand(3)", "data = np"))
    assert info is not None and (info.kind, info.dtype) == (K.NDARRAY, "float64")


def test_imports_resolve_through_aliases(analysis: Analysis) -> None:
    assert analysis.qualname(_expr(analysis, "T.zeros", "self.table")) == "torch.zeros"
    assert analysis.qualname(_expr(analysis, "nn.Linear", "self.fc =")) == "torch.nn.Linear"


def test_hot_loop_covers_the_loader_loop_and_the_forward_it_calls(analysis: Analysis) -> None:
    assert analysis.is_hot(_expr(analysis, "model(x)", "out = model(x)"))
    assert analysis.is_hot(_expr(analysis, "self.fc(x)", "return self.fc(x)"))
    assert not analysis.is_hot(_expr(analysis, 'print("done")', 'print("done")'))
    assert not analysis.is_hot(_expr(analysis, "make_batch()", "batch = make_batch()"))


def test_unknown_names_stay_unknown() -> None:
    a = Analysis("def f(thing):\n    thing.to('cuda')\n    return thing.value\n", "u.py")
    value = next(n for n in ast.walk(a.tree) if isinstance(n, ast.Attribute) and n.attr == "value")
    assert a.info(value) is None


def test_a_parameter_shadows_a_global_of_the_same_name() -> None:
    source = "import torch\nlabels = torch.zeros(3)\n\ndef f(labels):\n    return labels\n"
    a = Analysis(source, "s.py")
    returned = next(n for n in ast.walk(a.tree) if isinstance(n, ast.Return))
    assert returned.value is not None
    assert a.info(returned.value) is None


ARGUMENTS = """\
import torch
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)


def accuracy(logits, labels):
    return logits


class Meter:
    def __init__(self, start):
        self.start = start

    def update(self, val):
        return val


def mixed(x):
    return x


for _ in range(2):
    out = model(torch.randn(3, 2).to(device))
    accuracy(out, torch.zeros(3))
    Meter(out).update(out.sum())
    mixed(out)
    mixed("text")
"""


def _returned(a: Analysis, function: str) -> ast.expr:
    func = next(
        n for n in ast.walk(a.tree) if isinstance(n, ast.FunctionDef) and n.name == function
    )
    value = next(n for n in ast.walk(func) if isinstance(n, ast.Return)).value
    assert value is not None
    return value


def test_a_parameter_gets_what_every_call_of_the_file_hands_it() -> None:
    a = Analysis(ARGUMENTS, "args.py")
    for function in ("accuracy", "update"):
        info = a.info(_returned(a, function))
        assert info is not None and (info.kind, info.device) == (K.TENSOR, "accel"), function
    given = next(
        n for n in ast.walk(a.tree) if isinstance(n, ast.Assign) and a.text(n.value) == "start"
    )
    info = a.info(given.value)  # `__init__` is given what `Meter(...)` is called with
    assert info is not None and (info.kind, info.device) == (K.TENSOR, "accel")


def test_a_parameter_given_different_kinds_stays_unknown() -> None:
    a = Analysis(ARGUMENTS, "args.py")
    assert a.info(_returned(a, "mixed")) is None
