"""The rule catalogue: codes, names, severities and documentation."""

from torchport.rules.registry import FAMILIES, Rule, all_rules, doc_sections, get, matches, register

__all__ = ["FAMILIES", "Rule", "all_rules", "doc_sections", "get", "matches", "register"]
