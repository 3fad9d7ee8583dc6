"""``[tool.torchport]`` in pyproject.toml: found by walking up from the target, validated strictly.

Keys (all optional)::

    select = ["TP1", "TP201"]        # codes or prefixes to run ("ALL" for every rule)
    extend-select = ["TP5"]          # added to select
    ignore = ["TP203"]               # removed from the selection
    per-file-ignores = {"tests/*" = ["TP1"]}
    exclude = ["build/", "*_pb2.py"] # extra paths to skip (gitignore-style globs)
    fail-on = "warning"              # lowest severity that makes the exit code 1
"""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from torchport.errors import ConfigError
from torchport.findings import Severity
from torchport.rules import matches

_LIST_KEYS = ("select", "extend-select", "ignore", "exclude")
_KNOWN = (*_LIST_KEYS, "per-file-ignores", "fail-on")


@dataclass(frozen=True)
class Config:
    """The effective configuration (defaults when no pyproject.toml has a section)."""

    select: tuple[str, ...] = ("ALL",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    fail_on: Severity = Severity.WARNING
    source: Path | None = None  # the pyproject.toml it came from

    @property
    def root(self) -> Path | None:
        return None if self.source is None else self.source.parent

    def enabled(self, code: str, path: str | None = None) -> bool:
        """Whether rule ``code`` runs, for ``path`` when given (for per-file-ignores)."""
        selected = matches(code, [*self.select, *self.extend_select])
        if not selected or matches(code, list(self.ignore)):
            return False
        if path is None:
            return True
        rel = self._relative(path)
        return not any(
            fnmatch.fnmatch(rel, pattern) and matches(code, list(codes))
            for pattern, codes in self.per_file_ignores.items()
        )

    def _relative(self, path: str) -> str:
        p = Path(path).resolve()
        if self.root is not None:
            try:
                return PurePosixPath(p.relative_to(self.root.resolve())).as_posix()
            except ValueError:
                pass
        return PurePosixPath(p).as_posix()


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a [tool.torchport] table.

    A pyproject.toml without the table does not stop the walk, so a package inside a monorepo
    still finds the repository's configuration. The TOML is parsed (not searched as text), so
    dotted keys (``[tool]`` + ``torchport.select = …``) count; a file that mentions torchport
    but is not valid TOML is an error rather than silently passed over.
    """
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        mentions = candidate.is_file() and "torchport" in _read(candidate)
        if mentions and _section(candidate) is not None:
            return candidate
    return None


def load(start: Path | None = None, explicit: Path | None = None) -> Config:
    """The configuration for ``start`` (a file or folder), or from ``explicit`` when given."""
    path = explicit if explicit is not None else find_pyproject(start or Path.cwd())
    if path is None:
        return Config()
    return parse(_section(path) or {}, path)


def _section(path: Path) -> dict[str, Any] | None:
    """The [tool.torchport] table of ``path``, None when it has none; ConfigError when the file
    is not valid TOML or ``tool`` / ``tool.torchport`` is not a table."""
    text = _read(path)
    if sys.version_info >= (3, 11):
        import tomllib  # imported only where a file is read (most projects have no section)
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), None, f"not valid TOML: {exc}") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(str(path), None, f"`tool` must be a table, not {_kind(tool)}")
    section = tool.get("torchport")
    if section is not None and not isinstance(section, dict):
        raise ConfigError(str(path), None, f"must be a table, not {_kind(section)}")
    return section


def _kind(value: object) -> str:
    return type(value).__name__


def parse(section: dict[str, Any], path: Path) -> Config:
    """Validate a [tool.torchport] table; every problem names the file and key."""
    where = str(path)
    for key in section:
        if key not in _KNOWN:
            raise ConfigError(where, key, f"unknown key (known: {', '.join(_KNOWN)})")
    lists = {k: _codes(where, k, section[k]) for k in _LIST_KEYS if k in section}
    for key in ("select", "extend-select", "ignore"):
        for code in lists.get(key, ()):
            _check_selector(where, key, code)
    pfi_raw = section.get("per-file-ignores", {})
    if not isinstance(pfi_raw, dict):
        raise ConfigError(where, "per-file-ignores", "expected a table of glob = [codes]")
    pfi: dict[str, tuple[str, ...]] = {}
    for pattern, codes in pfi_raw.items():
        key = f'per-file-ignores."{pattern}"'
        pfi[pattern] = _codes(where, key, codes)
        for code in pfi[pattern]:
            _check_selector(where, key, code)
    fail_on = Severity.WARNING
    if "fail-on" in section:
        raw = section["fail-on"]
        try:
            fail_on = Severity.parse(raw) if isinstance(raw, str) else Severity.parse(repr(raw))
        except ValueError as exc:
            raise ConfigError(where, "fail-on", str(exc)) from None
    return Config(
        select=lists.get("select", ("ALL",)),
        extend_select=lists.get("extend-select", ()),
        ignore=lists.get("ignore", ()),
        per_file_ignores=pfi,
        exclude=lists.get("exclude", ()),
        fail_on=fail_on,
        source=path,
    )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), None, f"cannot read: {exc}") from None


def _codes(where: str, key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list):
        raise ConfigError(where, key, f"expected a list of strings, got {type(value).__name__}")
    if not all(isinstance(v, str) for v in value):
        raise ConfigError(where, key, "expected a list of strings")
    return tuple(value)


def _check_selector(where: str, key: str, code: str) -> None:
    from torchport.rules import all_rules

    upper = code.upper()
    if upper == "ALL":
        return
    if not (upper.startswith("TP") and upper[2:].isdigit() and len(upper) <= 5):
        raise ConfigError(where, key, f"{code!r} is not a rule code or prefix (like TP1 or TP101)")
    if not any(rule.code.startswith(upper) for rule in all_rules()):
        raise ConfigError(
            where, key, f"{code!r} matches no rule (`torchport rule --all` lists them)"
        )
