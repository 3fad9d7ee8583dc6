"""One host tensor, unchanged, copied to the device by the same line at every step (TP104): a
lookup table kept on the host. Never reported for a buffer refilled between its copies (in
place, or through NumPy, which torch's version counter does not see), a pinned staging
buffer, a tensor copied twice, or one copied once an epoch, many steps apart (a validation
set, or a small dataset kept on the host, batch after batch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from torchport.runtime import watch


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


class Schedule:
    def __init__(self) -> None:
        self.alphas = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 100), 0)  # table made

    def scale(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.alphas.to(x.device)[t].sqrt()[:, None] * x  # table copied


def _copies(steps: int, how: str) -> list[tuple[int, tuple[int, ...]]]:
    array = np.zeros(4, dtype=np.float32)
    with watch("cuda") as w:
        schedule = Schedule()
        buffer = torch.zeros(4)
        shared = torch.from_numpy(array)
        pinned = torch.zeros(4).pin_memory()
        dataset = [torch.randn(4) for _ in range(3)]
        x = torch.randn(8, 4, device="cuda")
        total = torch.zeros((), device="cuda")
        for step in range(steps):
            if how == "table":
                total += schedule.scale(x, torch.randint(0, 100, (8,), device="cuda")).sum()
            elif how == "refilled":
                buffer.copy_(torch.full((4,), float(step)))
                total += buffer.to("cuda").sum()
            elif how == "numpy":
                array[:] = step
                total += shared.to("cuda").sum()
            elif how == "pinned":
                total += pinned.to("cuda", non_blocking=True).sum()
            elif how == "dataset":  # three batches kept on the host, one epoch a step here
                for batch in dataset:
                    weight = torch.ones(4, device="cuda", requires_grad=True)
                    (batch.to("cuda") * weight).sum().backward()
            else:  # a validation set copied once an epoch, after the epoch's steps
                for _ in range(4):
                    weight = torch.ones(4, device="cuda", requires_grad=True)
                    (x * weight).sum().backward()
                total += buffer.to("cuda").sum()
    return [
        (f.location.line, tuple(r.line for r in f.related))
        for f in w.findings
        if f.code == "TP104" and f.location is not None
    ]


def test_a_table_kept_on_the_host_and_copied_at_every_step_is_reported_at_the_copy() -> None:
    assert _copies(4, "table") == [(_line("# table copied"), (_line("# table made"),))]


def test_a_refilled_buffer_a_pinned_one_two_copies_or_one_an_epoch_are_not() -> None:
    assert _copies(4, "refilled") == []
    assert _copies(4, "numpy") == []
    assert _copies(4, "pinned") == []
    assert _copies(4, "epoch") == []
    assert _copies(4, "dataset") == []  # each batch copied once an epoch, three steps apart
    assert _copies(2, "table") == []
