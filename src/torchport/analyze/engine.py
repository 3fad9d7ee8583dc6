"""Run the detectors over one source text, honour ``# noqa``, and apply fixes until stable."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from torchport.analyze.checks import DETECTORS, Analysis
from torchport.analyze.fixer import apply_edits
from torchport.findings import Edit, Finding, Safety

Selected = Callable[[str], bool]
MAX_ROUNDS = 10
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*))?", re.I)
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_FILE_NOQA = re.compile(r"^\s*#\s*torchport:\s*noqa\b", re.I | re.M)


def file_noqa(source: str) -> bool:
    """Whether the file opts out of every check (``# torchport: noqa`` on its own line)."""
    # the case-insensitive, multi-line search is slow: most files do not say "torchport:"
    return "torchport:" in source.lower() and _FILE_NOQA.search(source) is not None


def analyze(
    source: str, path: str, selected: Selected, tree: ast.Module | None = None
) -> list[Finding]:
    """Findings of every selected detector for ``source`` (SyntaxError if it does not parse)."""
    analysis = Analysis(source, path, tree)
    try:
        findings: list[Finding] = []
        for code, (_, detect) in DETECTORS.items():
            if selected(code):
                findings.extend(detect(analysis))
        unique = {(f.code, f.location): f for f in findings}
        return sorted(_without_noqa(unique.values(), analysis.lines), key=Finding.sort_key)
    finally:
        analysis.release()


def _without_noqa(findings: Iterable[Finding], lines: list[str]) -> list[Finding]:
    kept: list[Finding] = []
    for f in findings:
        loc = f.location
        rows = {loc.line, loc.end_line or loc.line} if loc is not None else set()
        if not any(_suppressed(lines, row, f.code) for row in rows):
            kept.append(f)
    return kept


def _suppressed(lines: list[str], row: int, code: str) -> bool:
    if not 0 < row <= len(lines) or "noqa" not in lines[row - 1].lower():
        return False
    match = _NOQA.search(lines[row - 1])
    if match is None:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    return any(code.startswith(c.upper()) for c in re.split(r"[\s,]+", codes) if c)


@dataclass
class FixOutcome:
    """The fixed text, the findings whose fixes went in, and what is left."""

    text: str
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    problem: str | None = None


def fix(source: str, path: str, selected: Selected, unsafe: bool = False) -> FixOutcome:
    """Apply fixes round after round until none applies (bounded); the result always parses."""
    outcome = FixOutcome(source)
    findings = analyze(source, path, selected)
    for _ in range(MAX_ROUNDS):
        fixable = [f for f in findings if _allowed(f, unsafe)]
        if not fixable:
            break
        chosen, edits = _compatible(fixable, source=outcome.text)
        new_text, _ = apply_edits(outcome.text, edits)
        if new_text == outcome.text:
            break
        try:
            tree = ast.parse(new_text)
        except SyntaxError as exc:
            codes = ", ".join(sorted({f.code for f in chosen}))
            outcome.problem = f"fixes for {codes} would not parse ({exc.msg}); not applied"
            break
        outcome.text = new_text
        outcome.applied.extend(chosen)
        findings = analyze(new_text, path, selected, tree)
    outcome.remaining = findings
    return outcome


def _allowed(f: Finding, unsafe: bool) -> bool:
    return f.fix is not None and f.fix.applicable and (unsafe or f.fix.safety is Safety.SAFE)


def _compatible(fixable: list[Finding], source: str) -> tuple[list[Finding], list[Edit]]:
    """Whole fixes whose edits do not overlap (shared identical edits, e.g. imports, are fine)."""
    starts = [0]
    for line in _LINES.findall(source):
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[min(max(line, 1), len(starts)) - 1] + column

    taken: dict[Edit, tuple[int, int]] = {}
    chosen: list[Finding] = []
    for f in fixable:
        assert f.fix is not None
        spans = {
            e: (offset(e.line, e.column), offset(e.end_line, e.end_column)) for e in f.fix.edits
        }
        if any(
            _overlaps(span, other)
            for e, span in spans.items()
            for o, other in taken.items()
            if e != o
        ):
            continue
        taken.update(spans)
        chosen.append(f)
    return chosen, list(taken)


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    if a[0] == a[1] == b[0] == b[1]:
        return True  # two different insertions at one point: order would be arbitrary
    return a[0] < b[1] and b[0] < a[1]
