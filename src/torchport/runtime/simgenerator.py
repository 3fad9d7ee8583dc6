"""Random generators under ``--simulate``: one on the simulated device, and a CPU one misused.

A CPU-only build cannot make ``torch.Generator(device="cuda")``. Under the simulation that
generator is a CPU generator that reports the simulated device, so programs that seed their own
device generator run. A plain CPU generator handed to a draw on the simulated device fails as
on a GPU: "Expected a 'cuda' device type for generator but found 'cpu'".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchport.runtime import simdevices

REAL_GENERATOR = torch.Generator


class _Meta(type(REAL_GENERATOR)):  # type: ignore[misc]
    """Every generator, also torch's own (``torch.default_generator``), is a ``torch.Generator``
    while the simulated class stands in for it."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, REAL_GENERATOR)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, REAL_GENERATOR)


def generator_class(resolve: Callable[[Any], torch.device | None]) -> type:
    """``torch.Generator`` for the simulation; ``resolve`` names the simulated device or None."""

    class Generator(REAL_GENERATOR, metaclass=_Meta):
        _sim_device: torch.device | None

        def __new__(cls, device: Any = "cpu") -> Generator:
            target = resolve(device)
            made = REAL_GENERATOR.__new__(cls, "cpu" if target is not None else device)  # type: ignore[call-arg]
            made._sim_device = target
            return made

        @property
        def device(self) -> torch.device:  # type: ignore[override]
            return self._sim_device or REAL_GENERATOR.device.__get__(self)

    return Generator


def check(generator: Any, device: torch.device) -> None:
    """Raise as CUDA does when a host generator draws numbers for the simulated ``device``."""
    if not isinstance(generator, REAL_GENERATOR) or getattr(generator, "_sim_device", None):
        return
    if REAL_GENERATOR.device.__get__(generator).type == "cpu":
        raise RuntimeError(
            f"Expected a '{device.type}' device type for generator but found 'cpu' (torchport "
            "--simulate: a CPU torch.Generator cannot draw numbers on the GPU; make it with "
            "torch.Generator(device=device))"
        )


def check_host(generator: Any) -> None:
    """Raise as CUDA does when a generator of the simulated device draws numbers for the host
    (``torch.rand(n, generator=g)`` without ``device=``)."""
    device = getattr(generator, "_sim_device", None)
    if device is not None:
        raise simdevices.device_error(
            f"Expected a 'cpu' device type for generator but found '{device.type}'"
        )
