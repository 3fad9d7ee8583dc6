"""The rule catalogue: one class per rule, registered by a decorator, documented in its docstring.

Detectors (static in ``analyze``, at run time in ``runtime``, over probes in ``doctor``) refer to
these classes and build Findings through :meth:`Rule.finding`, so a code means the same mistake
wherever it is seen.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any, ClassVar, TypeVar

from torchport.findings import Finding, Fix, Location, Severity

_CODE = re.compile(r"^TP[1-5]\d\d$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
REQUIRED_HEADINGS = ("What it does", "Why is this bad?")
KNOWN_HEADINGS = (*REQUIRED_HEADINGS, "Example", "Use instead", "Fix safety", "References")
FAMILIES = {
    "TP1": "device placement",
    "TP2": "host-device transfers and synchronization",
    "TP3": "dtype, precision and AMP",
    "TP4": "multi-GPU and distributed",
    "TP5": "environment (doctor)",
}
# The modules that define rules; importing one registers its rules.
_RULE_MODULES = (
    "device",
    "device_api",
    "device_ops",
    "transfer",
    "dtype",
    "amp",
    "distributed",
    "collectives",
    "optimizers",
    "checkpoints",
    "processes",
    "environment",
    "build",
)


class Rule:
    """Base class of every rule. Subclasses set ``code``, ``name`` and ``severity``."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]

    @classmethod
    def finding(
        cls,
        message: str,
        location: Location | None = None,
        fix: Fix | None = None,
        *,
        severity: Severity | None = None,
        related: tuple[Location, ...] = (),
        **details: Any,
    ) -> Finding:
        return Finding(
            code=cls.code,
            name=cls.name,
            severity=cls.severity if severity is None else severity,
            message=message,
            location=location,
            fix=fix,
            details=details,
            related=related,
        )

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        """The first sentence under 'What it does'."""
        section = doc_sections(cls.doc()).get("What it does", "")
        return section.split("\n\n")[0].replace("\n", " ").strip()


_REGISTRY: dict[str, type[Rule]] = {}
_CODE_OF_NAME: dict[str, str] = {}  # kept beside _REGISTRY: a name's code in one look-up
R = TypeVar("R", bound=type[Rule])


def doc_sections(doc: str) -> dict[str, str]:
    """Split a rule docstring into its ``## Heading`` sections."""
    sections: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in doc.splitlines():
        if line.startswith("## "):
            if current is not None:
                sections[current] = "\n".join(lines).strip()
            current, lines = line[3:].strip(), []
        elif current is not None:
            lines.append(line)
    if current is not None:
        sections[current] = "\n".join(lines).strip()
    return sections


def register(cls: R) -> R:
    """Class decorator: validate a rule's code and name and add it to the catalogue.

    Its docstring is checked by :func:`doc_problems`, in the catalogue's test rather than here:
    parsing every rule's documentation took a tenth of each command's start.
    """
    code, name = cls.code, cls.name
    if not _CODE.match(code):
        raise ValueError(f"rule code {code!r} must look like TP101")
    if not _NAME.match(name):
        raise ValueError(f"rule name {name!r} must be kebab-case")
    if code in _REGISTRY and _REGISTRY[code] is not cls:
        raise ValueError(f"rule code {code} registered twice")
    if _CODE_OF_NAME.get(name, code) != code:
        raise ValueError(f"rule name {name} registered twice")
    _REGISTRY[code] = cls
    _CODE_OF_NAME[name] = code
    return cls


def doc_problems(cls: type[Rule]) -> list[str]:
    """What is wrong with a rule's documentation: a required section missing or empty, or a
    heading ``rule`` and the generated docs do not know (nothing when it is complete)."""
    sections = doc_sections(cls.doc())
    missing = [h for h in REQUIRED_HEADINGS if h not in sections or not sections[h]]
    unknown = [h for h in sections if h not in KNOWN_HEADINGS]
    problems = [f"{cls.code} docstring lacks: {', '.join(missing)}"] if missing else []
    if unknown:
        problems.append(f"{cls.code} docstring has unknown headings: {', '.join(unknown)}")
    return problems


def _load() -> None:
    for module in _RULE_MODULES:
        importlib.import_module(f"torchport.rules.{module}")


def all_rules() -> list[type[Rule]]:
    """Every registered rule, sorted by code."""
    _load()
    return [_REGISTRY[c] for c in sorted(_REGISTRY)]


def get(code_or_name: str) -> type[Rule] | None:
    """The rule with this code (case-insensitive) or kebab-case name, if any."""
    _load()
    key = code_or_name.strip()
    if key.upper() in _REGISTRY:
        return _REGISTRY[key.upper()]
    return next((r for r in _REGISTRY.values() if r.name == key.lower()), None)


def matches(code: str, selectors: list[str]) -> bool:
    """Whether ``code`` is picked by any selector: ``ALL``, a prefix such as ``TP1``, or a code."""
    return any(s.upper() == "ALL" or code.startswith(s.upper()) for s in selectors)
