"""to_device over the less common containers: nothing is left behind, nothing recurses forever."""

from __future__ import annotations

import dataclasses
from collections import deque, namedtuple
from types import MappingProxyType
from typing import Any

import pytest
import torch

from torchport.transfer import default_device, to_device
from torchport.transfer._tree import map_structure

Pair = namedtuple("Pair", ["left", "right"])


class Interval(tuple[Any, ...]):
    """A tuple subclass whose constructor takes its items one by one."""

    def __new__(cls, low: Any, high: Any) -> Interval:
        return super().__new__(cls, (low, high))


class Loose(tuple[Any, ...]):
    """A plain tuple subclass, built from one iterable like tuple itself."""


class Checked(Pair):
    """A namedtuple subclass with its own __new__ that checks and forwards its fields."""

    def __new__(cls, left: Any, right: Any) -> Checked:
        assert left is not None
        return super().__new__(cls, left, right)


class Counted(tuple[Any, ...]):
    """A tuple subclass built from a count: neither way of passing the items rebuilds it."""

    def __new__(cls, n: int) -> Counted:
        return super().__new__(cls, (torch.ones(1),) * n)


class TaggedSet(set[Any]):
    tag = "x"


class History(deque[Any]):
    pass


@dataclasses.dataclass(eq=False)
class Node:
    value: torch.Tensor
    links: list[Any]


def _all_meta(values: Any) -> bool:
    return all(isinstance(t, torch.Tensor) and t.is_meta for t in values)


@pytest.mark.parametrize("kind", [set, frozenset, TaggedSet])
def test_tensors_in_sets_are_moved_and_the_set_type_is_kept(kind: type) -> None:
    original = kind([torch.ones(1), torch.zeros(2), "label"])
    out = to_device({"s": original}, "meta")["s"]
    assert type(out) is kind and len(out) == 3 and "label" in out
    assert _all_meta(v for v in out if not isinstance(v, str))
    assert all(t.is_cpu for t in original if isinstance(t, torch.Tensor))


def test_tensors_in_a_deque_are_moved_and_its_maxlen_and_order_are_kept() -> None:
    original = deque([torch.ones(1), torch.zeros(2), torch.ones(3)], maxlen=3)
    out = to_device([original], "meta")[0]
    assert type(out) is deque and out.maxlen == 3
    assert [t.shape[0] for t in out] == [1, 2, 3] and _all_meta(out)


def test_deque_subclass_keeps_its_type_and_maxlen() -> None:
    out = to_device(History([torch.ones(1)], maxlen=4), "meta")
    assert type(out) is History and out.maxlen == 4 and _all_meta(out)


def test_mappingproxy_holding_tensors_is_a_type_error_naming_its_place() -> None:
    batch = {"meta": [1, MappingProxyType({"x": torch.ones(1)})]}
    with pytest.raises(TypeError, match=r"batch\['meta'\]\[1\] \(builtins.mappingproxy\)"):
        to_device(batch, "meta")


def test_mappingproxy_without_tensors_is_kept_as_is() -> None:
    proxy = MappingProxyType({"lr": 0.1, "names": ["a", "b"]})
    assert to_device({"config": proxy, "x": torch.ones(1)}, "meta")["config"] is proxy


@pytest.mark.parametrize(
    "make",
    [
        Interval,
        lambda a, b: Loose((a, b)),
        Pair,
        Checked,
        lambda a, b: torch.return_types.max((a, b)),
    ],
    ids=["custom-new", "plain-subclass", "namedtuple", "namedtuple-custom-new", "structseq"],
)
def test_tuple_subclasses_are_rebuilt_with_their_type(make: Any) -> None:
    for _ in range(2):  # the second time, the way learnt the first time
        original = make(torch.ones(1), torch.zeros(1))
        out = to_device(original, "meta")
        assert type(out) is type(original) and len(out) == 2 and _all_meta(out)


def test_tuple_subclass_that_cannot_be_rebuilt_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match=r"batch\['c'\] \(.*Counted\): neither Counted\(items\)"):
        to_device({"c": Counted(2)}, "meta")


def test_unrebuildable_tuple_subclass_without_tensors_is_kept() -> None:
    size = torch.Size([2, 3])
    assert to_device([size], "meta")[0] is size


def test_self_containing_list_is_a_value_error_naming_the_path() -> None:
    batch: list[Any] = [torch.ones(1), {"inner": []}]
    batch[1]["inner"].append(batch)
    with pytest.raises(ValueError, match=r"batch\[1\]\['inner'\]\[0\] is batch again"):
        to_device(batch, "meta")


def test_cycle_through_a_dataclass_is_a_value_error() -> None:
    node = Node(torch.ones(1), [])
    node.links.append(node)
    with pytest.raises(ValueError, match=r"batch\.links\[0\] is batch again"):
        to_device(node, "meta")


def test_shared_but_acyclic_containers_are_not_cycles() -> None:
    shared = [torch.ones(1)]
    out = to_device({"a": shared, "b": shared}, "meta")
    assert _all_meta(out["a"]) and _all_meta(out["b"])


def test_deep_acyclic_nesting_still_raises_recursion_error() -> None:
    batch: Any = torch.ones(1)
    for _ in range(5000):
        batch = [batch]
    with pytest.raises(RecursionError):
        to_device(batch, "meta")


def test_device_none_means_the_default_device() -> None:
    out = to_device({"x": torch.ones(1)}, None)
    assert out["x"].device == torch.device(default_device())


def test_map_structure_visits_set_and_deque_leaves_in_a_stable_order() -> None:
    # The CUDA path walks a batch twice (collect, then replace) and relies on the same order.
    batch = {"s": {torch.ones(1), torch.zeros(1)}, "d": deque([torch.ones(2)])}
    first: list[torch.Tensor] = []
    map_structure(batch, first.append, lambda o: o)
    second: list[torch.Tensor] = []
    map_structure(batch, second.append, lambda o: o)
    assert [id(t) for t in first] == [id(t) for t in second] and len(first) == 3
