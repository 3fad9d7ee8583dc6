from __future__ import annotations

import pytest
import torch

from torchport.transfer import _pack


def _leaves() -> list[torch.Tensor]:
    return [
        torch.arange(6, dtype=torch.float64).reshape(2, 3).t(),  # non-contiguous
        torch.tensor(7, dtype=torch.int16),  # 0-dim
        torch.tensor([True, False, True]),
        torch.empty(0, 4),
        torch.arange(5, dtype=torch.uint8),
        torch.arange(8.0).reshape(2, 2, 2).to(torch.complex64),
    ]


def _specs(leaves: list[torch.Tensor]) -> list[tuple[torch.dtype, torch.Size]]:
    return [(t.dtype, t.shape) for t in leaves]


@pytest.mark.parametrize("start", [0, 1, 300])
def test_every_slot_starts_aligned_and_slots_do_not_overlap(start: int) -> None:
    slots, end = _pack.layout(_specs(_leaves()), start)
    assert all(s.offset % _pack.ALIGN == 0 and s.offset >= start for s in slots)
    ends = [s.offset + s.nbytes for s in slots]
    assert all(e <= nxt.offset for e, nxt in zip(ends, slots[1:], strict=False))
    assert end >= ends[-1] and end % _pack.ALIGN == 0


def test_copy_all_then_views_round_trip_values_dtypes_and_shapes() -> None:
    leaves = _leaves()
    slots, end = _pack.layout(_specs(leaves))
    buffer = torch.full((end,), 0xAB, dtype=torch.uint8)
    _pack.copy_all(_pack.views(buffer, slots), leaves)
    for leaf, out in zip(leaves, _pack.views(buffer, slots), strict=True):
        assert out.dtype == leaf.dtype and out.shape == leaf.shape and out.is_contiguous()
        assert torch.equal(out, leaf)


def test_views_share_the_buffer_and_start_at_their_slot() -> None:
    leaves = _leaves()
    slots, end = _pack.layout(_specs(leaves), 512)
    buffer = torch.zeros(end, dtype=torch.uint8)
    for slot, out in zip(slots, _pack.views(buffer, slots), strict=True):
        assert out.untyped_storage().data_ptr() == buffer.data_ptr()
        assert out.storage_offset() * out.element_size() == slot.offset


def test_only_plain_dense_cpu_tensors_are_packed() -> None:
    assert _pack.can_pack(torch.ones(2))
    assert not _pack.can_pack(torch.ones(2, requires_grad=True))
    assert not _pack.can_pack(torch.ones(2).to_sparse())
    assert not _pack.can_pack(torch.ones(2, device="meta"))
