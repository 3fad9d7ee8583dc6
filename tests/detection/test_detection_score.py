"""The scorer of benchmarks/detection_score.py: expectations, groups, modes and false alarms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scoring import score

BUGGY = """# source: https://example.org/report
# area: dtype
# bug: two lines of one bug, one line of another
x = 1  # expect[a]: TP301
y = 2  # expect[a]: TP150, TP102
z = 3  # expect: any
s = "# expect: TP999 inside a string is not an expectation"
"""


def _case(tmp_path: Path, folder: str, text: str) -> Any:
    path = tmp_path / folder / "case.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return score.parse_case(path)


def test_expectations_group_by_label_and_ignore_strings(tmp_path: Path) -> None:
    case = _case(tmp_path, "bugs", BUGGY)
    assert case.area == "dtype"
    assert {b.label: b.lines for b in case.bugs} == {
        "a": {4: frozenset({"TP301"}), 5: frozenset({"TP150", "TP102"})},
        "line 6": {6: frozenset({"any"})},
    }


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (BUGGY.replace("# expect: any", "# expect: TP1"), "unknown codes"),
        (BUGGY.replace("# expect: any", "# expect TP101"), "malformed"),
        (BUGGY.replace("# area: dtype", "# area: speed"), "area"),
        (BUGGY.replace("# source: https://example.org/report\n", ""), "source"),
    ],
)
def test_a_malformed_case_is_a_corpus_error(tmp_path: Path, text: str, why: str) -> None:
    with pytest.raises(score.CorpusError, match=why):
        _case(tmp_path, "bugs", text)


def test_a_clean_case_may_not_expect_anything(tmp_path: Path) -> None:
    text = "# twin of: bugs/case.py\n# area: AMP\n# correct: yes\nx = 1  # expect: any\n"
    with pytest.raises(score.CorpusError, match="expects nothing"):
        _case(tmp_path, "clean", text)


def test_a_bug_is_found_on_any_line_of_its_group_and_modes_differ(tmp_path: Path) -> None:
    case = _case(tmp_path, "bugs", BUGGY)
    wrong_code = [score.Finding("TP204", "warning", 5)]
    right_code = [score.Finding("TP102", "error", 5)]
    elsewhere = [score.Finding("TP301", "error", 9)]
    results = {"check": {case.name: wrong_code}, "run": {case.name: right_code + elsewhere}}
    areas, alarms = score.score([case], results)
    group_a = case.bugs[0]
    found = areas["all"].found
    assert group_a not in found[("check", "code")]
    assert group_a in found[("check", "line")]
    assert group_a in found[("run", "code")]
    assert group_a in found[("both", "code")]
    assert [(n, f.line) for n, f in alarms["run"]["buggy_unexpected"]] == [(case.name, 9)]
    assert alarms["check"]["buggy_unexpected"] == []


def test_info_findings_on_clean_cases_are_not_false_alarms(tmp_path: Path) -> None:
    clean = _case(tmp_path, "clean", "# twin of: bugs/x.py\n# area: AMP\n# correct: yes\n")
    findings = [score.Finding("TP202", "info", 3), score.Finding("TP204", "warning", 3)]
    _, alarms = score.score([clean], {"check": {clean.name: findings}})
    assert [f.code for _, f in alarms["check"]["clean"]] == ["TP204"]


def test_a_corpus_kept_elsewhere_is_scored_with_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bugs").mkdir()
    (tmp_path / "bugs" / "moved.py").write_text(
        "# source: https://example.org/report\n# area: device placement\n"
        "# bug: the result of .to() is thrown away\nimport torch\n\nx = torch.zeros(2)\n"
        'x.to("cuda")  # expect: any\n',
        encoding="utf-8",
    )
    assert score.main(["--tool", "check", "--json", "--cases", str(tmp_path)]) == 0
    recall = json.loads(capsys.readouterr().out)["recall"]
    assert recall["line"]["all"]["check"] == {"found": 1, "total": 1}


def test_a_folder_without_cases_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert score.main(["--cases", str(tmp_path)]) == 2
    assert "no bugs/ folder" in capsys.readouterr().err
