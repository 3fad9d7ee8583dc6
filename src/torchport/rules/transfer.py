"""Rules of one family; see registry.FAMILIES."""

from __future__ import annotations

__all__: list[str] = []
