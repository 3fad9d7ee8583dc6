"""A pinned staging buffer written again while a non_blocking copy from it may still be reading
it (TP252): reported under the simulation when no synchronization came between the copy and
the write, and never when one did or when the buffer is pageable (its copy is staged at once).
"""

from __future__ import annotations

from pathlib import Path

import torch

from torchport.runtime import watch


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


def _decode(steps: int, pinned: bool, wait: bool) -> list[tuple[int, tuple[int, ...]]]:
    with watch("cuda") as w:
        staging = torch.zeros(4, dtype=torch.long)
        staging = staging.pin_memory() if pinned else staging
        on_device = torch.zeros(4, dtype=torch.long, device="cuda")
        copied = torch.cuda.Event()
        total = torch.zeros((), dtype=torch.long, device="cuda")
        for step in range(steps):
            if wait:
                copied.synchronize()
            staging[:] = torch.arange(4) + step  # overwritten here
            on_device.copy_(staging, non_blocking=True)  # copied here
            copied.record()
            total += on_device.sum()
    return [
        (f.location.line, tuple(r.line for r in f.related))
        for f in w.findings
        if f.code == "TP252" and f.location is not None
    ]


def test_a_pinned_buffer_rewritten_under_its_copy_is_reported_at_the_write() -> None:
    assert _decode(3, pinned=True, wait=False) == [
        (_line("# overwritten here"), (_line("# copied here"),))
    ]


def test_a_buffer_waited_for_or_pageable_is_not_reported() -> None:
    assert _decode(3, pinned=True, wait=True) == []
    assert _decode(3, pinned=False, wait=False) == []
