"""Runtime observation: ``torchport run`` and ``torchport.watch`` (observe, explain, simulate)."""

from torchport.runtime.watch import watch

__all__ = ["watch"]
