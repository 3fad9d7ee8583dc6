from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict, namedtuple
from typing import Any, ClassVar

import pytest
import torch

from torchport.transfer import cast_table, to_device

Pair = namedtuple("Pair", ["left", "right"])


@dataclasses.dataclass(frozen=True)
class Frozen:
    x: torch.Tensor
    label: str
    derived: torch.Tensor = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "derived", self.x * 2)


@dataclasses.dataclass(slots=True)
class Slotted:
    x: torch.Tensor


class Recording(torch.Tensor):
    """Records the keyword arguments of each ``Tensor.to`` call; can pretend to be pinned."""

    calls: ClassVar[list[dict[str, Any]]] = []
    pinned: ClassVar[bool] = False

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is torch.Tensor.to:
            cls.calls.append(kwargs)
        if func is torch.Tensor.is_pinned:
            return cls.pinned
        return super().__torch_function__(func, types, args, kwargs)


class Movable:
    def __init__(self) -> None:
        self.moved_to: torch.device | None = None

    def to(self, device: torch.device) -> Movable:
        self.moved_to = device
        return self


def test_nested_containers_keep_their_types_and_order() -> None:
    batch = OrderedDict(
        b=[torch.ones(2), (torch.zeros(1), "text")],
        a=Pair(left=torch.arange(3), right={"k": torch.ones(1)}),
    )
    out = to_device(batch, "meta")
    assert type(out) is OrderedDict and list(out) == ["b", "a"]
    assert type(out["a"]) is Pair and type(out["b"][1]) is tuple
    assert out["b"][1][1] == "text"
    leaves = [out["b"][0], out["b"][1][0], out["a"].left, out["a"].right["k"]]
    assert all(t.device.type == "meta" for t in leaves)


def test_defaultdict_keeps_its_default_factory() -> None:
    batch: defaultdict[str, list[torch.Tensor]] = defaultdict(list, x=[torch.ones(1)])
    out = to_device(batch, "meta")
    assert type(out) is defaultdict and out.default_factory is list
    assert out["x"][0].is_meta and out["missing"] == []


def test_frozen_dataclass_keeps_init_false_fields() -> None:
    out = to_device(Frozen(torch.ones(2), "cat"), "meta")
    assert type(out) is Frozen and out.label == "cat"
    assert out.x.is_meta and out.derived.is_meta


def test_slots_dataclass_is_rebuilt() -> None:
    original = Slotted(torch.ones(1))
    out = to_device(original, "meta")
    assert out.x.is_meta and original.x.is_cpu


def test_objects_with_their_own_to_are_moved_by_it() -> None:
    movable = Movable()
    to_device({"m": movable}, "meta")
    assert movable.moved_to == torch.device("meta")


def test_other_leaves_are_returned_untouched() -> None:
    untouched = [object(), "s", 3, None, bytearray(b"x")]
    out = to_device({"values": untouched}, "meta")
    assert all(a is b for a, b in zip(out["values"], untouched, strict=True))


def test_containers_are_rebuilt_not_mutated() -> None:
    batch = {"x": torch.ones(1)}
    out = to_device(batch, "meta")
    assert out is not batch and batch["x"].is_cpu


def test_float_dtype_casts_floats_only() -> None:
    batch = {"x": torch.ones(2, dtype=torch.float64), "y": torch.arange(2), "m": torch.ones(1) > 0}
    out = to_device(batch, "cpu", dtype=torch.float32)
    assert out["x"].dtype == torch.float32
    assert out["y"].dtype == torch.int64 and out["m"].dtype == torch.bool


def test_dtype_mapping_casts_integers_without_scaling() -> None:
    image = torch.tensor([0, 255], dtype=torch.uint8)
    out = to_device(image, "cpu", dtype={torch.uint8: torch.float32})
    assert out.dtype == torch.float32 and out.tolist() == [0.0, 255.0]


def test_integer_dtype_alone_is_rejected_with_a_hint() -> None:
    with pytest.raises(ValueError, match="pass a mapping"):
        cast_table(torch.int32)


def test_default_non_blocking_is_off_for_pageable_memory() -> None:
    Recording.calls.clear()
    Recording.pinned = False
    to_device(torch.ones(2).as_subclass(Recording), "meta")
    assert Recording.calls[0]["non_blocking"] is False


def test_default_non_blocking_is_on_for_pinned_memory() -> None:
    Recording.calls.clear()
    Recording.pinned = True
    try:
        to_device(torch.ones(2).as_subclass(Recording), "meta")
    finally:
        Recording.pinned = False
    assert Recording.calls[0]["non_blocking"] is True


def test_device_to_host_is_never_non_blocking_by_default() -> None:
    Recording.calls.clear()
    Recording.pinned = True
    try:
        to_device(torch.ones(2, device="meta").as_subclass(Recording), "cpu")
    except NotImplementedError:
        pass  # meta -> cpu cannot copy data; the call's arguments are what this test pins
    finally:
        Recording.pinned = False
    assert Recording.calls[0]["non_blocking"] is False
