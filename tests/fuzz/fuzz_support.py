"""Strategies for the fuzz tests: Python source (hypothesmith's grammar-based programs and
PyTorch-flavoured programs built from the shapes the rules and the port act on) and notebooks.

The PyTorch programs matter because grammar-generated code almost never says ``torch``, so it
reaches the parser and the scaffolding but not the detectors, the fixes or the port's rewrites.
"""

from __future__ import annotations

import json
import os
from typing import Any

import hypothesmith
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# ``ci``: bounded and deterministic, for the normal suite. ``fuzz``: ``python3 dev.py fuzz``,
# random and long (TORCHPORT_FUZZ_EXAMPLES examples per property).
_QUIET = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
settings.register_profile(
    "ci", max_examples=8, deadline=None, derandomize=True, database=None,
    suppress_health_check=_QUIET, print_blob=True,
)  # fmt: skip
settings.register_profile(
    "fuzz", max_examples=int(os.environ.get("TORCHPORT_FUZZ_EXAMPLES", "500")), deadline=None,
    database=None, suppress_health_check=_QUIET, print_blob=True,
)  # fmt: skip
settings.load_profile("fuzz" if os.environ.get("TORCHPORT_FUZZ") else "ci")

NAMES = st.sampled_from(["x", "y", "batch", "model", "net", "loss", "out", "t", "arr", "data"])
SMALL = st.integers(min_value=1, max_value=64).map(str)
DEVICES = st.sampled_from(['"cuda"', "'cuda:0'", '"cpu"', "device", 'torch.device("cuda")'])

LINES = [
    "{a} = nn.Linear({i}, {j})",
    "{a} = torch.randn({i}, {j})",
    "{a} = torch.zeros({i}, dtype=torch.float64)",
    "{a}.cuda()",
    "{a}.to({d})",
    "{a} = {a}.to({d}, non_blocking=True)",
    "{a} = {b}({a})",
    "device = torch.device({d})",
    "state = torch.load('{a}.pt')",
    "torch.save({a}.state_dict(), '{b}.pt')",
    "{a} = {b}.cpu().numpy()",
    "{a} = {b}.numpy()",
    "print({a}.item())",
    "{a} = torch.from_numpy(np.random.rand({i}))",
    "{a} = torch.tensor([{i}, {j}]).long()",
    "{a} = nn.DataParallel({b})",
    "scaler = torch.cuda.amp.GradScaler()",
    "optimizer = torch.optim.SGD({a}.parameters(), lr=0.1)",
    "{a} = DataLoader({b}, batch_size={i}, shuffle=True)",
    "{a} = tuple({b}.cuda() for {b} in [{a}, {a}, {a}, {a}, {a}, {a}, {a}, {a}, {a}, {a}])",
    "{a} = torch.cat([{b}.to({d}) for {b} in {a}], dim=0)  # noqa: TP1",
    "{a}: torch.Tensor = torch.ones({i}, device={d})",
    "{a} = {b}.to({d}) if {a} else {b}",
    "del {a}",
    "pass",
]
BLOCKS = [
    "for {a}, {b} in loader:\n{body}",
    "for epoch in range({i}):\n{body}",
    "with torch.no_grad():\n{body}",
    "with torch.cuda.amp.autocast():\n{body}",
    "if torch.cuda.is_available():\n{body}",
    "def train({a}, {b}):\n{body}",
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.{a} = torch.zeros({i})\n        self.layers = [nn.Linear({i}, {j})]\n"
    "    def forward(self, {a}):\n{body}",
    "try:\n{body}\nexcept RuntimeError:\n    pass",
]
HEADER = (
    "import torch\nimport torch.nn as nn\nimport numpy as np\n"
    "from torch.utils.data import DataLoader\n"
)


@st.composite
def _line(draw: st.DrawFn) -> str:
    template = draw(st.sampled_from(LINES))
    return template.format(
        a=draw(NAMES), b=draw(NAMES), i=draw(SMALL), j=draw(SMALL), d=draw(DEVICES)
    )


def _indent(text: str, levels: int = 1) -> str:
    pad = "    " * levels
    return "\n".join(pad + line if line else line for line in text.split("\n"))


@st.composite
def _block(draw: st.DrawFn, body: st.SearchStrategy[str]) -> str:
    template = draw(st.sampled_from(BLOCKS))
    depth = 2 if template.startswith("class") else 1
    inner = _indent(draw(body), depth)
    if template.startswith("class"):
        inner += "\n        return " + draw(NAMES)
    return template.format(a=draw(NAMES), b=draw(NAMES), i=draw(SMALL), j=draw(SMALL), body=inner)


STATEMENTS = st.recursive(
    _line(),
    lambda inner: st.one_of(
        _block(st.lists(inner, min_size=1, max_size=4).map("\n".join)),
        st.lists(inner, min_size=1, max_size=4).map("\n".join),
    ),
    max_leaves=12,
)


@st.composite
def torch_programs(draw: st.DrawFn, header: str | None = None) -> str:
    """A valid PyTorch-flavoured module: imports (``header`` or some), then statements and
    nested blocks."""
    body = "\n".join(draw(st.lists(STATEMENTS, min_size=1, max_size=6)))
    if header is None:
        header = draw(st.sampled_from([HEADER, "import torch\n", ""]))
    return header + body + "\n"


def python_sources() -> st.SearchStrategy[str]:
    """Any valid Python: grammar-generated, libcst-generated, or PyTorch-flavoured."""
    return st.one_of(torch_programs(), hypothesmith.from_grammar(), hypothesmith.from_node())


IPYTHON_LINES = st.sampled_from(
    ["%matplotlib inline", "!pip install torch", "files = !ls", "x?", "??torch.load",
     "t = %timeit -o f()", "%%time"]
)  # fmt: skip


@st.composite
def notebook_cells(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Cells mixing PyTorch code, IPython lines and markdown (sources as text or line lists)."""
    cells: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        kind = draw(st.sampled_from(["code", "code", "markdown", "raw"]))
        parts = draw(st.lists(st.one_of(torch_programs(), IPYTHON_LINES), min_size=1, max_size=3))
        source = "\n".join(part.rstrip("\n") for part in parts)
        if draw(st.booleans()):
            cell_source: Any = source.splitlines(keepends=True)
        else:
            cell_source = source
        cell = {"cell_type": kind, "metadata": {}, "source": cell_source}
        if kind == "code":
            cell |= {"outputs": [{"output_type": "stream", "text": "ok"}], "execution_count": 1}
        cells.append(cell)
    return cells


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


@st.composite
def notebooks(draw: st.DrawFn) -> str:
    """Notebook files: mostly well formed, some with malformed parts, some not JSON at all."""
    shape = draw(st.sampled_from(["good", "good", "good", "odd cells", "odd json", "not json"]))
    if shape == "not json":
        return draw(st.text(max_size=40))
    if shape == "odd json":
        return json.dumps(draw(JSON))
    cells: list[Any] = draw(notebook_cells())
    if shape == "odd cells":
        cells = [*cells, draw(JSON)]
    data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(data, indent=1) + "\n"
