"""How the program feeds its loops: DistributedSamplers and DataLoaders that do not pin.

- TP403: a shuffling DistributedSampler iterated in several passes whose ``set_epoch`` is never
  called, so every epoch visits the samples in the same order (a pass that only peeks at the
  first batch before ``set_epoch``, as pytorch/examples' DDP tutorial does, is no mistake);
- TP407: a DistributedSampler that no loop ever iterated, while a DataLoader over its dataset
  was (the loader shuffles the whole dataset on every rank instead);
- TP201: batches of a DataLoader made without ``pin_memory`` copied to the accelerator, step
  after step (as ``check``, an explicit ``pin_memory=False`` is the program's choice).

Findings point at the line that made the sampler or the loader, where the fix goes.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.data import DataLoader, DistributedSampler, dataloader

from torchport.findings import Fix
from torchport.rules.distributed import DistributedSamplerUnused, SamplerWithoutSetEpoch
from torchport.rules.transfer import LoaderWithoutPinMemory
from torchport.runtime.patching import Patches
from torchport.runtime.sites import Site, tensor_leaves, user_caller, user_site

if TYPE_CHECKING:
    from torchport.runtime.observer import Observer

# A loader whose batches are copied this often is feeding a loop (a single validation batch
# is not worth pinning).
MIN_UNPINNED_COPIES = 3


class _Unpinned:
    """A loader that does not pin (by the line that made it): batches fetched, and how many of
    them had a tensor copied to the device (a batch of several tensors counts once)."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.fetched = 0
        self.copied = 0
        self.last_copied = -1


class _SamplerState:
    def __init__(self, site: Site | None, shuffle: bool) -> None:
        self.site = site
        self.shuffle = shuffle
        self.passes = 0
        self.epoch_set = False
        # where a pass began (the user's `for` over the loader) and the line calling that
        # function (an epoch loop around `train_one_epoch(loader)`): where set_epoch belongs
        self.iterated: tuple[Site, ...] = ()


class SamplerMonitor:
    """Wraps DistributedSampler and DataLoader for the length of a watch."""

    def __init__(self, observer: Observer) -> None:
        self._observer = observer
        self._patches = Patches()
        self._samplers: weakref.WeakKeyDictionary[Any, _SamplerState] = weakref.WeakKeyDictionary()
        self._loaders: weakref.WeakKeyDictionary[Any, _Unpinned] = weakref.WeakKeyDictionary()
        self._states: list[_SamplerState] = []
        # Samplers over the dataset of a loader that iterated without them (TP407 at the end
        # if no loop ever iterates them).
        self._suspects: list[_SamplerState] = []

    def install(self) -> None:
        wrap = self._patches.wrap
        wrap(DistributedSampler, "__init__", self._sampler_init)
        wrap(DistributedSampler, "__iter__", self._sampler_iter)
        wrap(DistributedSampler, "set_epoch", self._set_epoch)
        wrap(DataLoader, "__init__", self._loader_init)
        wrap(DataLoader, "__iter__", self._loader_iter)
        wrap(dataloader._BaseDataLoaderIter, "__next__", self._next)

    def remove(self) -> None:
        self._patches.restore()
        self._guarded("checking samplers", self._sampler_findings)

    def _guarded(self, what: str, check: Any, *args: Any) -> None:
        try:
            check(*args)
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            self._observer.internal(what, internal)

    # --- samplers -------------------------------------------------------------------------------
    def _sampler_init(self, original: Any, sampler: Any, *args: Any, **kwargs: Any) -> None:
        original(sampler, *args, **kwargs)
        state = _SamplerState(user_site("DistributedSampler"), bool(getattr(sampler, "shuffle", 0)))
        self._samplers[sampler] = state
        self._states.append(state)  # judged at the end, also if the sampler is gone by then

    def _sampler_iter(self, original: Any, sampler: Any) -> Any:
        state = self._samplers.get(sampler)
        if state is not None:
            state.passes += 1
            if not state.iterated:
                found = (user_site("for ... in loader"), user_caller())
                state.iterated = tuple(site for site in found if site is not None)
        return original(sampler)

    def _set_epoch(self, original: Any, sampler: Any, epoch: int) -> None:
        state = self._samplers.get(sampler)
        if state is not None:
            state.epoch_set = True
        original(sampler, epoch)

    def _sampler_findings(self) -> None:
        for state in self._states:
            if state.passes > 1 and not state.epoch_set and state.shuffle:
                self._observer.add(
                    SamplerWithoutSetEpoch.finding(
                        f"this shuffling DistributedSampler was iterated {state.passes} times "
                        "and set_epoch was never called: every epoch visits the samples in the "
                        "same order",
                        None if state.site is None else state.site.location(),
                        Fix("call sampler.set_epoch(epoch) at the start of every epoch"),
                        related=tuple(site.location() for site in state.iterated),
                    ),
                    state.site,
                )
        self._unused_samplers()

    def _unused_samplers(self) -> None:
        for state in self._suspects:
            if state.passes:
                continue
            self._observer.add(
                DistributedSamplerUnused.finding(
                    "this DistributedSampler is never iterated, while a DataLoader over the "
                    "same dataset is: every rank goes through the whole dataset",
                    None if state.site is None else state.site.location(),
                    Fix(
                        "pass it to the DataLoader: DataLoader(dataset, sampler=sampler) "
                        "(and no shuffle=True)"
                    ),
                ),
                state.site,
            )

    # --- loaders --------------------------------------------------------------------------------
    def _loader_init(self, original: Any, loader: Any, *args: Any, **kwargs: Any) -> None:
        original(loader, *args, **kwargs)
        site = user_site("DataLoader")
        if "pin_memory" not in kwargs and site is not None:
            self._loaders[loader] = _Unpinned(site)

    def _loader_iter(self, original: Any, loader: Any) -> Any:
        iterator = original(loader)
        self._guarded("checking a loader's sampler", self._note_suspects, loader)
        if not loader.pin_memory and isinstance(iterator, dataloader._BaseDataLoaderIter):
            iterator._torchport_unpinned = self._loaders.get(loader)  # type: ignore[attr-defined]
        return iterator

    def _note_suspects(self, loader: Any) -> None:
        used = {id(loader.sampler), id(getattr(loader.batch_sampler, "sampler", None))}
        for sampler, state in list(self._samplers.items()):
            unused = sampler.dataset is loader.dataset and id(sampler) not in used
            if unused and state not in self._suspects:
                self._suspects.append(state)

    def _next(self, original: Any, iterator: Any) -> Any:
        batch = original(iterator)
        mark = getattr(iterator, "_torchport_unpinned", None)
        if mark is not None:  # a loader that does not pin: its batch's copies are counted
            mark.fetched += 1
            for tensor in tensor_leaves(batch):
                self._observer.unpinned[tensor] = (mark, mark.fetched)
        return batch


def note_copy(observer: Observer, source: torch.Tensor, dst: torch.device) -> None:
    """TP201 once MIN_UNPINNED_COPIES batches of a loader that does not pin went to the device."""
    entry = observer.unpinned.get(source)  # type: ignore[no-untyped-call]
    if not isinstance(entry, tuple) or dst.type == "cpu":
        return
    mark, batch = entry
    if batch == mark.last_copied:
        return
    mark.last_copied = batch
    mark.copied += 1
    if mark.copied != MIN_UNPINNED_COPIES:
        return
    site = mark.site
    observer.add(
        LoaderWithoutPinMemory.finding(
            f"batches of this DataLoader are copied to {dst} from pageable memory: each copy "
            "is staged through a pinned buffer first and cannot overlap with compute",
            site.location(),
            Fix("DataLoader(..., pin_memory=True), and .to(device, non_blocking=True)"),
        ),
        site,
    )
