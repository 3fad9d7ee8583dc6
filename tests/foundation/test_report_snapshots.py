"""One snapshot per renderer over the same findings (regenerate with --update-goldens).

The sample uses codes no rule has (TP9xx), so the snapshots do not change as the catalogue grows.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from torchport import __version__
from torchport.findings import Edit, Finding, Fix, Location, Report, Safety, Severity
from torchport.report import FORMATS, render

SNAPSHOTS = Path(__file__).parent / "snapshots"


def sample_report() -> Report:
    return Report(
        command="check",
        findings=[
            Finding(
                "TP991",
                "to-result-discarded",
                Severity.ERROR,
                "`x.to(device)` returns a new tensor; the result is thrown away, `x` stays on cpu",
                Location("train.py", 23, 4, 23, 16),
                Fix("Assign the result: `x = x.to(device)`", (Edit(23, 4, 23, 4, "x = "),)),
                related=(Location("train.py", 20, 4),),
            ),
            Finding(
                "TP992",
                "sync-in-hot-loop",
                Severity.WARNING,
                "`loss.item()` waits for the GPU on every step, 100% of 1,000 steps",
                Location("train.py", 40, 8),
                Fix("Accumulate on the device", (), Safety.UNSAFE),
            ),
            Finding(
                "TP993",
                "float64-numpy-input",
                Severity.INFO,
                "float64 data, with a comma, a colon: and 100% and a\nnew line",
                Location("nb.ipynb", 2, 0, cell=3),
            ),
            Finding("TP994", "cpu-only-build", Severity.WARNING, "no location for this one"),
        ],
        facts={"torch": "2.13.0", "gpus": [{"name": "H100", "memory_gib": 79.6}], "cuda": None},
        verdict="GPU not usable: CPU-only build",
    )


def _rendered(fmt: str) -> str:
    out = io.StringIO()
    render(sample_report(), fmt, out)
    return out.getvalue().replace(__version__, "<version>")


@pytest.mark.parametrize("fmt", FORMATS)
def test_renderer_matches_snapshot(fmt: str, update_goldens: bool) -> None:
    snapshot = SNAPSHOTS / f"report.{fmt}.txt"
    text = _rendered(fmt)
    if update_goldens or not snapshot.exists():
        snapshot.write_text(text, encoding="utf-8")
    assert text == snapshot.read_text(encoding="utf-8")


def test_json_schema_has_documented_fields() -> None:
    data = json.loads(_rendered("json"))
    assert set(data) == {
        "tool",
        "version",
        "schema_version",
        "command",
        "findings",
        "facts",
        "verdict",
        "summary",
    }
    first = next(f for f in data["findings"] if f["code"] == "TP991")
    assert set(first) == {
        "code",
        "name",
        "severity",
        "message",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "cell",
        "fix",
        "details",
        "related",
    }
    assert first["related"] == [{"path": "train.py", "line": 20, "column": 5, "cell": None}]
    assert data["summary"]["total"] == 4
    assert data["summary"]["fixable"] == 1
    assert first["column"] == 5  # 1-based in output


def test_sarif_is_2_1_0_with_one_rule_per_code() -> None:
    data = json.loads(_rendered("sarif"))
    assert data["version"] == "2.1.0"
    run = data["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert ids == sorted(set(ids), key=ids.index)
    for result in run["results"]:
        assert ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in {"error", "warning", "note"}
        for loc in result.get("locations", []):
            assert loc["physicalLocation"]["region"]["startLine"] >= 1


def test_github_annotations_escape_properties_and_data() -> None:
    lines = _rendered("github").splitlines()
    info = next(line for line in lines if "TP993" in line)
    assert info.startswith("::notice file=nb.ipynb,line=2,col=1,title=TP993 float64-numpy-input::")
    assert "%0A" in info and "100%25" in info
    assert lines[-1].startswith("::notice title=torchport check::")


def test_text_is_plain_when_not_a_terminal() -> None:
    text = _rendered("text")
    assert "\x1b[" not in text
    assert "train.py:23:5: TP991 error to-result-discarded" in text
    assert "GPU not usable: CPU-only build" in text.splitlines()[-1]


def test_plain_text_is_what_rich_writes_to_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without rows among the facts, text to a pipe is written without rich; it must not differ.
    from torchport.report import terminal

    report = sample_report()
    report.facts.pop("gpus")
    report.findings.append(
        Finding(
            "TP995",
            "markup-lookalike",
            Severity.ERROR,
            "[bold]not markup[/] \\[x] {braces} \u00e9\u2192 100%",
            Location("a b/[x].py", 3, 1),
            Fix("use `x[0]` [red]", (Edit(3, 1, 3, 1, "y"),)),
        )
    )
    report.facts["nested"] = {"a_b": [1, 2.5, None], "flag": True, "empty": []}
    plain = io.StringIO()
    render(report, "text", plain)
    monkeypatch.setattr(terminal, "_has_rows", lambda facts: True)
    through_rich = io.StringIO()
    render(report, "text", through_rich)
    assert plain.getvalue() == through_rich.getvalue()
    assert "[bold]not markup[/] \\[x]" in plain.getvalue()
