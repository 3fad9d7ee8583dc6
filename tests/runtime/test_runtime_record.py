"""When a synchronizing call counts as being in the training loop."""

from __future__ import annotations

from torchport.runtime.record import SyncStats


def test_a_sync_on_every_step_is_in_the_loop() -> None:
    assert SyncStats(count=100, first_step=1, last_step=100).in_loop


def test_a_sync_once_per_epoch_or_every_tenth_step_is_not() -> None:
    assert not SyncStats(count=3, first_step=21, last_step=63).in_loop
    assert not SyncStats(count=10, first_step=10, last_step=100).in_loop


def test_a_sync_outside_any_step_is_not_in_the_loop() -> None:
    assert not SyncStats(count=1, first_step=5, last_step=5).in_loop


def test_two_syncs_in_a_short_run_are_no_evidence_of_a_sync_per_step() -> None:
    # Once per epoch of 4 steps (steps 3 and 7), or every other step of a 4-step run: the
    # clean twins xfer14 and xfer01 of the detection corpus, reported before.
    assert not SyncStats(count=2, first_step=3, last_step=7).in_loop
    assert not SyncStats(count=2, first_step=0, last_step=2).in_loop
    assert SyncStats(count=3, first_step=1, last_step=3).in_loop


def test_every_fourth_step_is_in_the_loop_and_every_fifth_is_not() -> None:
    # n syncs are n - 1 gaps apart: steps 0, 4, 8, 12 and 0, 5, 10, 15
    assert SyncStats(count=4, first_step=0, last_step=12).in_loop
    assert not SyncStats(count=4, first_step=0, last_step=15).in_loop
