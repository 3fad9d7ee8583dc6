"""TP209: a loss that still carries its graph, added into a running total step after step.

``total += loss`` (instead of ``loss.item()`` or ``loss.detach()``) makes the total part of every
step's autograd graph: each graph stays alive until the total is dropped, and device memory
grows through the epoch. Seen at run time: the result of an addition at one line is a scalar
with a graph, one of its operands is that line's own earlier result, and a ``backward()`` ran in
between. Summing losses within a step (``loss = loss + term`` over several heads, then one
backward) is no accumulation across steps and is not reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.utils.weak import WeakIdKeyDictionary

from torchport.findings import Fix
from torchport.rules.transfer import LossAccumulatedAsTensor
from torchport.runtime.sites import Site, user_site

if TYPE_CHECKING:
    from torchport.runtime.observer import Handler, Observer

T = torch.Tensor
ADDITIONS = {torch.add, T.add, T.add_, T.__iadd__, T.__radd__}
# Accumulations across this many steps at one line make a running total.
MIN_STEPS = 3


class _Total:
    """One running total's line, the step of its last addition and how many steps it spans."""

    def __init__(self, site: Site, step: int) -> None:
        self.site, self.step, self.steps = site, step, 1


class Accumulation:
    """Watches additions for a graph-carrying total (see the module doc)."""

    def __init__(self, observer: Observer) -> None:
        self._observer = observer
        self._totals: WeakIdKeyDictionary = WeakIdKeyDictionary()  # result tensor -> _Total

    def checked(self, handler: Handler) -> Handler:
        """``handler`` for an addition, with its result examined afterwards."""

        def addition(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            out = handler(func, args, kwargs)
            if isinstance(out, torch.Tensor) and out.dim() == 0 and out.grad_fn is not None:
                try:
                    self._note(args, out)
                except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
                    self._observer.internal("watching a running total", internal)
            return out

        return addition

    def _note(self, args: tuple[Any, ...], out: torch.Tensor) -> None:
        site = user_site("+=")
        if site is None:
            return
        step = self._observer.record.step
        found = (self._total_at(a, site) for a in args[:2])
        total = next((t for t in found if t is not None), None)
        if total is None:
            self._totals[out] = _Total(site, step)
            return
        if step > total.step:
            total.step, total.steps = step, total.steps + 1
            if total.steps == MIN_STEPS:
                self._report(site)
        self._totals[out] = total

    def _total_at(self, value: Any, site: Site) -> _Total | None:
        """The running total ``value`` is, if an earlier addition at ``site`` made it."""
        if not isinstance(value, torch.Tensor):
            return None
        total = self._totals.get(value)  # type: ignore[no-untyped-call]
        return total if isinstance(total, _Total) and total.site == site else None

    def _report(self, site: Site) -> None:
        self._observer.add(
            LossAccumulatedAsTensor.finding(
                f"a running total at this line adds a loss that still carries its graph, step "
                f"after step (seen across {MIN_STEPS} backward passes): every step's graph stays "
                "alive until the total is dropped",
                site.location(),
                Fix("add loss.item() (or loss.detach()) instead of the loss itself"),
            ),
            site,
        )
