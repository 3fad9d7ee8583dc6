"""Fixtures for the runtime tests (helpers live in runtime_support.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)
