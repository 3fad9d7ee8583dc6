"""An integer host tensor converted to a wider float dtype by its blocking copy to the device
(TP253): reported once a line has done it at every step, and never when the copy moves the
narrow tensor (converted on the device after), is non_blocking, or runs once."""

from __future__ import annotations

from pathlib import Path

import torch

from torchport.runtime import watch


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


def _replay(steps: int, how: str) -> list[tuple[int, str]]:
    frames = torch.randint(0, 256, (64, 4, 8, 8), dtype=torch.uint8)
    with watch("cuda") as w:
        total = torch.zeros((), device="cuda")
        for _ in range(steps):
            batch = frames[torch.randint(0, 64, (16,))]
            if how == "in the copy":
                state = batch.to("cuda", dtype=torch.float32)  # converted and copied
            elif how == "after the copy":
                state = batch.to("cuda").float()
            elif how == "non_blocking":
                state = batch.to("cuda", dtype=torch.float32, non_blocking=True)
            else:  # narrowed: float32 to float16 halves the bytes
                state = batch.float().to("cuda", dtype=torch.float16)
            total += state.div(255).sum()
    return [(f.location.line, f.message) for f in w.findings if f.code == "TP253" and f.location]


def test_a_blocking_copy_that_widens_uint8_to_float32_is_reported_at_its_line() -> None:
    [(line, message)] = _replay(4, "in the copy")
    assert line == _line("# converted and copied")
    assert "uint8 tensor of shape (16, 4, 8, 8) is converted to float32 on the CPU" in message
    assert "4x the bytes" in message


def test_a_copy_of_the_narrow_tensor_a_non_blocking_one_or_a_single_one_is_not() -> None:
    assert _replay(4, "after the copy") == []
    assert _replay(4, "non_blocking") == []
    assert _replay(4, "narrowed") == []
    assert _replay(2, "in the copy") == []  # set-up, not a step's
