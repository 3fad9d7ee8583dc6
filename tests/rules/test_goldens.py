"""Every static rule against its golden fixtures: bad.py, good.py, fix.in.py -> fix.out.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from torchport.analyze import engine
from torchport.analyze.checks import DETECTORS
from torchport.findings import Finding

HERE = Path(__file__).parent
FOLDERS = sorted(p for p in HERE.glob("TP*") if p.is_dir())
FIXES = [p for p in FOLDERS if (p / "fix.in.py").exists()]


def _only(code: str) -> engine.Selected:
    return lambda c: c == code


def _render(findings: list[Finding]) -> str:
    lines = []
    for f in findings:
        assert f.location is not None
        fix = ""
        if f.fix is not None:
            fix = f" [{f.fix.safety.value} fix]" if f.fix.applicable else " [no fix]"
        lines.append(f"{f.location.line}:{f.location.column + 1} {f.code} {f.message}{fix}")
    return "\n".join(lines) + "\n"


def _golden(path: Path, actual: str, update: bool) -> None:
    if update:
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run pytest tests/rules --update-goldens"
    assert actual == path.read_text(encoding="utf-8")


def test_every_static_rule_has_a_fixture_folder() -> None:
    assert {p.name for p in FOLDERS} >= set(DETECTORS)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_bad_fixture_findings_match_expected(folder: Path, update_goldens: bool) -> None:
    source = (folder / "bad.py").read_text(encoding="utf-8")
    if folder.name == "TP100":
        with pytest.raises(SyntaxError):
            ast.parse(source)
        return
    findings = engine.analyze(source, "bad.py", _only(folder.name))
    assert findings, "bad.py must trigger its rule"
    _golden(folder / "expected.txt", _render(findings), update_goldens)


@pytest.mark.parametrize("folder", [f for f in FOLDERS if f.name != "TP100"], ids=lambda p: p.name)
def test_good_fixture_has_no_finding(folder: Path) -> None:
    source = (folder / "good.py").read_text(encoding="utf-8")
    assert engine.analyze(source, "good.py", _only(folder.name)) == []


@pytest.mark.parametrize("folder", FIXES, ids=lambda p: p.name)
def test_fix_turns_fix_in_into_fix_out_once_and_for_all(folder: Path, update_goldens: bool) -> None:
    source = (folder / "fix.in.py").read_text(encoding="utf-8")
    fixed = engine.fix(source, "fix.in.py", _only(folder.name), unsafe=True)
    assert fixed.problem is None
    assert fixed.applied, "fix.in.py must get at least one fix"
    ast.parse(fixed.text)
    _golden(folder / "fix.out.py", fixed.text, update_goldens)
    again = engine.fix(fixed.text, "fix.out.py", _only(folder.name), unsafe=True)
    assert again.text == fixed.text
