"""The rule catalogue: unique codes, every rule documented, registration validated."""

from __future__ import annotations

import pytest

from torchport.findings import Severity
from torchport.rules import Rule, all_rules, doc_sections, get, matches, register
from torchport.rules.registry import FAMILIES, REQUIRED_HEADINGS, doc_problems


def test_codes_and_names_are_unique_and_documented() -> None:
    rules = all_rules()
    assert len({r.code for r in rules}) == len(rules)
    assert len({r.name for r in rules}) == len(rules)
    for rule in rules:
        assert doc_problems(rule) == []
        sections = doc_sections(rule.doc())
        for heading in REQUIRED_HEADINGS:
            assert sections.get(heading), f"{rule.code} lacks {heading}"
        assert rule.code[:3] in FAMILIES
        assert rule.summary()


def test_rule_lookup_by_code_is_case_insensitive_and_by_name() -> None:
    rules = all_rules()
    if not rules:
        pytest.skip("no rules registered yet")
    first = rules[0]
    assert get(first.code.lower()) is first
    assert get(first.name) is first
    assert get("TP999") is None


def _free_code(family: str = "TP1") -> str:
    taken = {r.code for r in all_rules()}
    return next(c for c in (f"{family}{n:02d}" for n in range(99, 0, -1)) if c not in taken)


def test_doc_problems_names_missing_sections_and_unknown_headings() -> None:
    class Undocumented(Rule):
        code = "TP199"
        name = "undocumented"
        severity = Severity.INFO

    class OddHeading(Rule):
        """## What it does\nx\n## Why is this bad?\n\n## Trivia\nz"""

        code = "TP299"
        name = "odd-heading"
        severity = Severity.INFO

    assert doc_problems(Undocumented) == ["TP199 docstring lacks: What it does, Why is this bad?"]
    assert doc_problems(OddHeading) == [
        "TP299 docstring lacks: Why is this bad?",
        "TP299 docstring has unknown headings: Trivia",
    ]


def test_register_rejects_bad_code_and_name() -> None:
    class BadCode(Rule):
        """## What it does\nx\n## Why is this bad?\ny"""

        code = "XX101"
        name = "bad-code"
        severity = Severity.INFO

    with pytest.raises(ValueError, match="must look like"):
        register(BadCode)

    class BadName(Rule):
        """## What it does\nx\n## Why is this bad?\ny"""

        code = _free_code("TP2")
        name = "Bad_Name"
        severity = Severity.INFO

    with pytest.raises(ValueError, match="kebab-case"):
        register(BadName)


def test_register_rejects_a_name_taken_by_another_code_but_not_a_repeat() -> None:
    first = all_rules()[0]

    class Namesake(Rule):
        """## What it does\nx\n## Why is this bad?\ny"""

        code = _free_code("TP4")
        name = first.name
        severity = Severity.INFO

    with pytest.raises(ValueError, match=f"rule name {first.name} registered twice"):
        register(Namesake)
    assert get(Namesake.code) is None
    assert register(first) is first  # the same rule again is not a clash


def test_finding_carries_rule_identity_and_details() -> None:
    class Sample(Rule):
        """## What it does\nFlags a sample.\n## Why is this bad?\nIt is."""

        code = _free_code("TP3")
        name = "sample"
        severity = Severity.WARNING

    f = Sample.finding("message", shape=(2, 3))
    assert (f.code, f.name, f.severity, f.details) == (
        Sample.code,
        "sample",
        Severity.WARNING,
        {"shape": (2, 3)},
    )
    assert Sample.finding("m", severity=Severity.ERROR).severity is Severity.ERROR
    assert Sample.summary() == "Flags a sample."


@pytest.mark.parametrize(
    ("code", "selectors", "expected"),
    [
        ("TP101", ["ALL"], True),
        ("TP101", ["TP1"], True),
        ("TP101", ["tp10"], True),
        ("TP101", ["TP2"], False),
        ("TP101", [], False),
    ],
)
def test_selectors_match_codes_by_prefix(code: str, selectors: list[str], expected: bool) -> None:
    assert matches(code, selectors) is expected
