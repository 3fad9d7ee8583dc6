"""The public API: a sorted ``__all__`` that matches what the package exports."""

from __future__ import annotations

import torchport


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert torchport.__all__ == sorted(torchport.__all__)
    for name in torchport.__all__:
        assert getattr(torchport, name) is not None


def test_unknown_attribute_raises_attribute_error() -> None:
    try:
        torchport.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
