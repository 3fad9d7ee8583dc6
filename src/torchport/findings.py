"""The one model for everything torchport says: Finding, Location, Fix, Edit, Severity, Report.

Every detector (static, runtime, doctor) produces Findings; every renderer consumes only these
types. This module imports nothing internal and nothing heavy (no torch, no libcst).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.IntEnum):
    """How bad a finding is; ordered so that ``>=`` compares against a failing threshold."""

    INFO = 10
    WARNING = 20
    ERROR = 30

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        """The severity named by ``text`` (case-insensitive); ValueError names the choices."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            choices = ", ".join(s.label for s in cls)
            raise ValueError(f"unknown severity {text!r} (choose from {choices})") from None


class Safety(enum.Enum):
    """ruff's fix safety: a safe fix cannot change behaviour; an unsafe one may."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Location:
    """A place in the user's code. Lines are 1-based, columns 0-based (as Python's ast)."""

    path: str
    line: int = 0
    column: int = 0
    end_line: int | None = None
    end_column: int | None = None
    cell: int | None = None  # notebook cell index (1-based) when the file is a .ipynb

    def __str__(self) -> str:
        where = self.path
        if self.cell is not None:
            where += f":cell {self.cell}"
        if self.line:
            where += f":{self.line}:{self.column + 1}"
        return where


@dataclass(frozen=True)
class Edit:
    """Replace the source between two positions (line 1-based, column 0-based) with ``content``."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str


@dataclass(frozen=True)
class Fix:
    """How to mend a finding: a title for people, and optional mechanical edits."""

    title: str
    edits: tuple[Edit, ...] = ()
    safety: Safety = Safety.SAFE

    @property
    def applicable(self) -> bool:
        return bool(self.edits)


@dataclass(frozen=True)
class Finding:
    """One mistake, at one place, with what to do about it."""

    code: str
    name: str
    severity: Severity
    message: str
    location: Location | None = None
    fix: Fix | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # other places the finding is about: where the offending value was made, when that is
    # not where it does harm (editors and SARIF viewers link to them)
    related: tuple[Location, ...] = field(default=(), compare=False)

    def sort_key(self) -> tuple[str, int, int, str]:
        loc = self.location
        if loc is None:
            return ("", 0, 0, self.code)
        return (loc.path, loc.line, loc.column, self.code)


@dataclass
class Report:
    """What one command has to say: findings plus facts and measurements (JSON-able values)."""

    command: str
    findings: list[Finding] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    verdict: str | None = None

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def fails(self, threshold: Severity) -> bool:
        worst = self.worst()
        return worst is not None and worst >= threshold
