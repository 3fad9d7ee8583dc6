"""When a synchronizing call counts as being in the training loop."""

from __future__ import annotations

from torchport.runtime.record import SyncStats


def _in_loop(count: int, first: int, last: int) -> bool:
    """``count`` syncs, the first at step ``first`` and the last at step ``last``."""
    return SyncStats(count=count).in_loop(last - first)


def test_a_sync_on_every_step_is_in_the_loop() -> None:
    assert _in_loop(100, 1, 100)


def test_a_sync_once_per_epoch_or_every_tenth_step_is_not() -> None:
    assert not _in_loop(3, 21, 63)
    assert not _in_loop(10, 10, 100)


def test_a_sync_outside_any_step_is_not_in_the_loop() -> None:
    assert not _in_loop(1, 5, 5)


def test_two_syncs_in_a_short_run_are_no_evidence_of_a_sync_per_step() -> None:
    # Once per epoch of 4 steps (steps 3 and 7), or every other step of a 4-step run: the
    # clean twins xfer14 and xfer01 of the detection corpus, reported before.
    assert not _in_loop(2, 3, 7)
    assert not _in_loop(2, 0, 2)
    assert _in_loop(3, 1, 3)


def test_every_fourth_step_is_in_the_loop_and_every_fifth_is_not() -> None:
    # n syncs are n - 1 gaps apart: steps 0, 4, 8, 12 and 0, 5, 10, 15
    assert _in_loop(4, 0, 12)
    assert not _in_loop(4, 0, 15)
