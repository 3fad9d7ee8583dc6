"""Property tests: for any valid Python and any notebook, ``check``, ``check --fix
--unsafe-fixes`` and ``port`` never raise, everything they write parses, and a second pass
changes nothing. Bounded here; ``python3 dev.py fuzz`` runs them long (see fuzz_support)."""

from __future__ import annotations

import ast
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import libcst as cst
from fuzz_support import HEADER, notebooks, python_sources, torch_programs
from hypothesis import given

from torchport.analyze import runner
from torchport.config import Config
from torchport.port import PortOptions, port_source
from torchport.port.files import MAX_DEPTH, internal_errors, nesting_depth, port_paths, write

CHECK = runner.Options(Config())
FIX = runner.Options(Config(), fix=True, unsafe=True)


@contextmanager
def _file(name: str, text: str) -> Iterator[Path]:
    # Hypothesis runs many examples per test: a fresh folder each, not a pytest fixture.
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8", newline="")
        yield path


def _portable(source: str) -> bool:
    try:
        return nesting_depth(ast.parse(source)) <= MAX_DEPTH
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


@given(python_sources())
def test_any_python_is_checked_fixed_and_ported_without_internal_errors(source: str) -> None:
    with _file("t.py", source) as path:
        checked = runner.check_file(path, CHECK)
        assert checked.problem is None or any(f.code == "TP100" for f in checked.findings)
        first = runner.check_file(path, FIX)
        fixed = path.read_text(encoding="utf-8")
        if first.problem is None:
            ast.parse(fixed)
        second = runner.check_file(path, FIX)
        assert (second.applied, path.read_text(encoding="utf-8")) == ([], fixed)
    if not _portable(source):
        return
    try:
        ported = port_source(source, "t.py", PortOptions())
    except cst.ParserSyntaxError:
        return  # valid Python that libcst cannot read: port/files.py reports it as skipped
    ast.parse(ported.after)
    assert port_source(ported.after, "t.py", PortOptions()).after == ported.after


@given(torch_programs(header=HEADER))
def test_torch_programs_are_fixed_and_ported_into_code_that_parses_and_stays_put(
    source: str,
) -> None:
    with _file("t.py", source) as path:
        first = runner.check_file(path, FIX)
        assert first.problem is None, first.problem
        fixed = path.read_text(encoding="utf-8")
        ast.parse(fixed)
        again = runner.check_file(path, FIX)
        assert (again.applied, path.read_text(encoding="utf-8")) == ([], fixed)
        results = port_paths([str(path)], PortOptions())
        assert internal_errors(results) == []
        assert write(results)[1] == []
        ast.parse(path.read_text(encoding="utf-8"))
        again_ported = port_paths([str(path)], PortOptions())
        assert [r.path for r in again_ported if r.changed] == []


def test_torch_cuda_amp_in_a_file_without_import_torch_is_ported_once() -> None:
    source = "x = nn.Linear(1, 1)\nwith torch.cuda.amp.autocast():\n    x.cuda()\n"
    once = port_source(source, "t.py", PortOptions()).after
    assert port_source(once, "t.py", PortOptions()).after == once


@given(notebooks())
def test_notebooks_are_checked_fixed_and_ported_or_reported(text: str) -> None:
    with _file("n.ipynb", text) as path:
        checked = runner.check_file(path, CHECK)
        if checked.problem is not None:
            assert [f.code for f in checked.findings] == ["TP100"]
            return
        runner.check_file(path, FIX)
        results = port_paths([str(path)], PortOptions())
        assert internal_errors(results) == []
        write(results)
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        assert isinstance(cells, list)
