"""docs/rules/ is generated from the catalogue and kept in sync with every registered rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchport.cli import main
from torchport.rules import all_rules, docs

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"


def test_rule_pages_match_the_catalogue() -> None:
    expected = docs.expected_pages()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in DOCS.glob("*.md")}
    stale = sorted(set(on_disk) ^ set(expected))
    assert not stale, f"run `python -m torchport.rules.docs` (out of sync: {stale})"
    changed = sorted(n for n in expected if on_disk[n] != expected[n])
    assert not changed, f"run `python -m torchport.rules.docs` (out of date: {changed})"


def test_doc_page_is_what_torchport_rule_prints(capsys: pytest.CaptureFixture[str]) -> None:
    rule = all_rules()[0]
    assert main(["rule", rule.code]) == 0
    assert capsys.readouterr().out == docs.page(rule)


def test_generator_writes_every_page_and_drops_stale_ones(tmp_path: Path) -> None:
    (tmp_path / "TP999.md").write_text("gone", encoding="utf-8")
    names = docs.write(tmp_path)
    assert not (tmp_path / "TP999.md").exists()
    assert {p.name for p in tmp_path.glob("*.md")} == set(names)
    assert len(names) == len(all_rules()) + 1
