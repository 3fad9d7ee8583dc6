"""Helpers for the runtime tests: run an example script in-process under a watch."""

from __future__ import annotations

import os
import re
from pathlib import Path

from torchport.runtime import watch
from torchport.runtime.program import run_program

SCRIPTS = Path(__file__).parent / "scripts"
_EXPECT = re.compile(r"#\s*expect:\s*(TP\d{3})")


def expected(script: Path) -> set[tuple[str, int]]:
    """The (code, line) pairs a script announces with `# expect: TPxxx` comments."""
    lines = script.read_text(encoding="utf-8").splitlines()
    return {(m.group(1), n) for n, text in enumerate(lines, 1) for m in _EXPECT.finditer(text)}


def found(w: watch, script: Path) -> set[tuple[str, int]]:
    """The (code, line) pairs of the findings located in ``script``."""
    out = set()
    for f in w.findings:
        if f.location is not None and os.path.samefile(f.location.path, script):
            out.add((f.code, f.location.line))
    return out


def run_script(
    script: Path, simulate: str | None = None, check_finite: bool = False
) -> tuple[int, watch]:
    w = watch(simulate, check_finite=check_finite)
    code = run_program(w, None, [str(script)])
    return code, w
