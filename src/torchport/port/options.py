"""What the user asked the port to do."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PortOptions:
    """``runtime_dependency``: use ``torchport.default_device``/``to_device`` in the ported code
    (off by default, so the ported code needs only torch). ``amp``: ``"bf16"`` adds autocast
    around forward and loss. ``distributed``: turn the script into a DDP script for torchrun.
    """

    runtime_dependency: bool = False
    amp: str | None = None
    distributed: bool = False
