from __future__ import annotations

import torch

from torchport.transfer import _pack


def _leaves() -> list[torch.Tensor]:
    return [
        torch.arange(6, dtype=torch.float64).reshape(2, 3).t(),  # non-contiguous
        torch.tensor(7, dtype=torch.int16),  # 0-dim
        torch.tensor([True, False, True]),
        torch.empty(0, 4),
        torch.arange(5, dtype=torch.uint8),
    ]


def test_every_slot_starts_aligned_and_slots_do_not_overlap() -> None:
    slots, total = _pack.plan(_leaves())
    assert all(s.offset % _pack.ALIGN == 0 for s in slots)
    ends = [s.offset + s.nbytes for s in slots]
    assert all(end <= nxt.offset for end, nxt in zip(ends, slots[1:], strict=False))
    assert total >= ends[-1] and total % _pack.ALIGN == 0


def test_pack_then_view_round_trips_values_dtypes_and_shapes() -> None:
    leaves = _leaves()
    slots, total = _pack.plan(leaves)
    buffer = torch.full((total,), 0xAB, dtype=torch.uint8)
    _pack.pack(leaves, slots, buffer)
    for leaf, slot in zip(leaves, slots, strict=True):
        out = _pack.view(buffer, slot)
        assert out.dtype == leaf.dtype and out.shape == leaf.shape
        assert torch.equal(out, leaf)


def test_only_plain_dense_cpu_tensors_are_packed() -> None:
    assert _pack.can_pack(torch.ones(2))
    assert not _pack.can_pack(torch.ones(2, requires_grad=True))
    assert not _pack.can_pack(torch.ones(2).to_sparse())
    assert not _pack.can_pack(torch.ones(2, device="meta"))
