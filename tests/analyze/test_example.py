"""The realistic example: every marked mistake is reported at its line, nothing else is."""

from __future__ import annotations

import re
from pathlib import Path

from torchport.analyze import engine
from torchport.analyze.checks import DETECTORS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train_with_mistakes.py"
BUNDLED = ROOT / "src" / "torchport" / "examples" / "cpu_training.py"
_MARK = re.compile(r"#\s*mistake:\s*(TP\d{3}(?:,\s*TP\d{3})*)")


def _marked(source: str) -> set[tuple[int, str]]:
    found = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = _MARK.search(line)
        if match:
            found |= {(number, code.strip()) for code in match.group(1).split(",")}
    return found


def _reported(path: Path) -> set[tuple[int, str]]:
    source = path.read_text(encoding="utf-8")
    findings = engine.analyze(source, str(path), DETECTORS.__contains__)
    return {(f.location.line, f.code) for f in findings if f.location is not None}


def test_example_mistakes_are_reported_at_their_lines_and_nothing_else() -> None:
    marked = _marked(EXAMPLE.read_text(encoding="utf-8"))
    assert len(marked) >= 12
    assert _reported(EXAMPLE) == marked


def test_bundled_demo_gets_its_real_findings_and_no_others() -> None:
    # The demo belongs to the README and may be edited: pin findings by the code on the line,
    # require the device mistakes it is built around, and allow only known-true extras.
    lines = BUNDLED.read_text(encoding="utf-8").splitlines()
    reported = {(code, lines[line - 1].strip()) for line, code in _reported(BUNDLED)}
    core = {
        ("TP301", "return torch.from_numpy(self.images[i]), torch.tensor(self.labels[i])"),
        ("TP106", "self.blocks = ["),
        ("TP105", "self.scale = torch.ones(channels, 1, 1)"),
        ("TP103", "noise = torch.randn(x.shape) * 0.01"),
        ("TP107", "state = torch.load(checkpoint)"),
    }
    assert core <= reported
    assert {code for code, _ in reported - core} <= {"TP204"}
