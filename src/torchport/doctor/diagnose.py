"""The diagnosis: every TP5xx check over one probe dict. Pure, so each is tested with fakes."""

from __future__ import annotations

from collections.abc import Callable

from torchport.doctor import checks_build, checks_cuda, checks_host
from torchport.doctor.facts import Probe
from torchport.findings import Finding

Check = Callable[[Probe], list[Finding]]
CHECKS: tuple[Check, ...] = (*checks_build.CHECKS, *checks_cuda.CHECKS, *checks_host.CHECKS)


def diagnose(probe: Probe) -> list[Finding]:
    """All findings for ``probe``, in check order."""
    return [finding for check in CHECKS for finding in check(probe)]
