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
