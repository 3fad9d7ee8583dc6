"""Wrapping library entry points for the length of a watch, and putting them back."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class Patches:
    """``wrap(owner, name, wrapper)`` makes ``owner.name(...)`` call ``wrapper(original, ...)``.

    ``restore()`` puts every original back, the last wrapped first, so that wrapping a name
    another patch already wrapped (the simulation's ``pin_memory``) unwinds in order.
    """

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, wrapper: Callable[..., Any]) -> None:
        original = getattr(owner, name)
        self._saved.append((owner, name, original))

        @functools.wraps(original)
        def patched(*args: Any, **kwargs: Any) -> Any:
            return wrapper(original, *args, **kwargs)

        setattr(owner, name, patched)

    def restore(self) -> None:
        while self._saved:
            owner, name, original = self._saved.pop()
            setattr(owner, name, original)
