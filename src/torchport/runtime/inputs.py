"""What enters the model and the loop: module inputs (dtype) and DataLoader batches (timing).

Module inputs are checked in the global forward pre-hook; DataLoader and DeviceLoader iterators
are timed by wrapping their ``__next__`` (restored on exit), which also labels each batch's
tensors with the line of the loop that fetched it.

Observation makes every torch call slower, and a ``num_workers=0`` loader makes many small ones
(a ``torch.tensor`` per sample, then a collate): observed, it took about 3x its own time, which
the starvation figures would then report as the program's. So each iterator's first batch is
fetched observed (float64 and dtype mistakes in ``__getitem__`` are seen there, and that wait
counts as start-up) and later batches unobserved, unless the first one used the simulated
device, which only the observer can provide.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.utils.data import dataloader

from torchport.findings import Fix
from torchport.rules.amp import HalfInputToFloatLayer
from torchport.rules.dtype import (
    Float64OnAccelerator,
    FloatIndicesToEmbedding,
    IntegerInputToFloatLayer,
)
from torchport.runtime.record import LoaderStats
from torchport.runtime.sites import user_site
from torchport.transfer._prefetch import PrefetchIterator

if TYPE_CHECKING:
    from torchport.runtime.observer import Observer

_INDEX_LAYERS = (nn.Embedding, nn.EmbeddingBag)
_HALF = (torch.float16, torch.bfloat16)
_AUTOCAST_DEVICES = ("cuda", "cpu", "mps")


def check_module_inputs(observer: Observer, module: nn.Module, args: tuple[Any, ...]) -> None:
    """A float64, integer or (outside autocast) half input to a float32 layer (TP302, TP303,
    TP313), or float indices to an embedding (TP352).

    Only the input a layer computes on is checked: torch.nn's own ``forward`` and its first
    argument. A module of the user's own may take integer indices beside its features (a graph
    layer's ``(x, edge_index)``), and torch.nn layers take integer targets and masks in later
    arguments; an op inside that gets a wrong dtype still fails with its error explained.
    """
    value = args[0] if args else None
    if not isinstance(value, torch.Tensor):
        return
    if isinstance(module, _INDEX_LAYERS):
        if value.is_floating_point() and _torch_layer(module):
            _float_indices(observer, module, value)
        return
    if value.dtype == torch.float32:
        return
    kind = _odd_input(value)
    if kind is None or not _torch_layer(module):
        return
    weight = next(module.parameters(recurse=False), None)
    if weight is None or weight.dtype != torch.float32:
        return
    if kind == "half" and _autocast_on():
        return  # autocast casts the weights for the layer: mixed precision as meant
    _report(observer, module, value, kind)


def _odd_input(value: torch.Tensor) -> str | None:
    """ "wide" (float64), "integer" or "half" (float16, bfloat16); None for anything else."""
    if value.dtype == torch.float64:
        return "wide"
    if value.dtype in _HALF:
        return "half"
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        return None
    return "integer"


def _autocast_on() -> bool:
    return any(torch.is_autocast_enabled(kind) for kind in _AUTOCAST_DEVICES)


_TORCH_LAYER: dict[type, bool] = {}


def _torch_layer(module: nn.Module) -> bool:
    """Whether ``module`` runs torch.nn's own forward (not a user's, nor a subclass's)."""
    kind = type(module)
    known = _TORCH_LAYER.get(kind)
    if known is None:
        owner = getattr(kind.forward, "__module__", None) or ""
        known = _TORCH_LAYER[kind] = owner.startswith("torch.nn.")
    return known


def _report(observer: Observer, module: nn.Module, value: torch.Tensor, kind: str) -> None:
    path = observer.tracker.path(module)
    site = user_site(f"{path}(...)")
    origin = observer.provenance.get(value)
    made = f"; it was created at {origin} by {origin.call}" if origin else ""
    dtype = str(value.dtype).replace("torch.", "")
    what = f"{dtype} input of shape {tuple(value.shape)} to {path} ({type(module).__name__}, "
    what += f"float32 weights){made}"
    location = None if site is None else site.location()
    related = (origin.location(),) if origin is not None and origin != site else ()
    if kind == "wide":
        finding = Float64OnAccelerator.finding(
            f"{what}: the layer fails or computes in float64",
            location,
            Fix("convert the data to float32 where it is made (.float(), or np.float32)"),
            related=related,
        )
    elif kind == "half":
        finding = HalfInputToFloatLayer.finding(
            f"{what}, outside autocast: the layer fails with a dtype mismatch",
            location,
            Fix(
                "keep the input float32 and compute in half precision with "
                'torch.autocast(device_type="cuda", dtype=torch.float16) around the forward pass'
            ),
            related=related,
        )
    else:
        finding = IntegerInputToFloatLayer.finding(
            f"{what}: float layers need floating-point inputs",
            location,
            Fix("convert it with .float() (or use nn.Embedding for indices)"),
            related=related,
        )
    observer.add(finding, site, key=path)


def _float_indices(observer: Observer, module: nn.Module, value: torch.Tensor) -> None:
    path = observer.tracker.path(module)
    site = user_site(f"{path}(...)")
    origin = observer.provenance.get(value)
    made = f"; they were made at {origin} by {origin.call}" if origin else ""
    dtype = str(value.dtype).replace("torch.", "")
    finding = FloatIndicesToEmbedding.finding(
        f"{dtype} indices of shape {tuple(value.shape)} to {path} ({type(module).__name__})"
        f"{made}: embeddings are looked up by integer index",
        None if site is None else site.location(),
        Fix("make the indices int64 where they are built (.long(), or torch.randint)"),
        related=(origin.location(),) if origin is not None and origin != site else (),
    )
    observer.add(finding, site, key=path)


class LoaderTimer:
    """Times every DataLoader and DeviceLoader iterator: waiting for a batch against the step.

    A DeviceLoader that prefetches on a thread is timed where the loop takes its batches; the
    DataLoader it reads from runs on that thread, where no line of the user's is waiting, so it
    is not timed a second time.
    """

    def __init__(self, observer: Observer) -> None:
        self._observer = observer
        self._saved: list[tuple[type, Callable[..., Any]]] = []

    def install(self) -> None:
        observer, timer = self._observer, self
        fetch = dataloader._BaseDataLoaderIter.__next__
        take = PrefetchIterator.__next__

        def dataloader_next(it: Any) -> Any:
            start = time.perf_counter()
            # Modules the loader runs (transforms in __getitem__) are not the model's forward.
            with observer.tracker.loading():
                if getattr(it, "_torchport_unobserved", False):
                    with observer.unobserved():
                        batch = fetch(it)
                else:
                    uses = observer.simulated_device_uses()
                    batch = fetch(it)
                    it._torchport_unobserved = observer.simulated_device_uses() == uses
            timer.on_batch(it, batch, start, time.perf_counter(), kind="DataLoader", source=it)
            return batch

        def device_loader_next(it: Any) -> Any:
            start = time.perf_counter()
            batch = take(it)
            end = time.perf_counter()
            timer.on_batch(it, batch, start, end, kind="DeviceLoader", source=it.source)
            return batch

        self._replace(dataloader._BaseDataLoaderIter, dataloader_next)
        self._replace(PrefetchIterator, device_loader_next)

    def _replace(self, cls: type, method: Callable[..., Any]) -> None:
        self._saved.append((cls, cls.__dict__["__next__"]))
        cls.__next__ = method  # type: ignore[attr-defined]

    def remove(self) -> None:
        while self._saved:
            cls, original = self._saved.pop()
            cls.__next__ = original  # type: ignore[attr-defined]

    def on_batch(
        self, it: Any, batch: Any, start: float, end: float, *, kind: str, source: Any
    ) -> None:
        try:
            self._on_batch(it, batch, start, end, kind=kind, source=source)
        except Exception as internal:  # noqa: BLE001 - timing never fails the program
            self._observer.internal("timing a loader", internal)

    def _on_batch(
        self, it: Any, batch: Any, start: float, end: float, *, kind: str, source: Any
    ) -> None:
        site = user_site(f"{kind} batch")
        if site is None:
            return
        record = self._observer.record
        stats = record.loaders.get(site)
        if stats is None:
            pinned = bool(getattr(source, "_pin_memory", False))
            stats = record.loaders[site] = LoaderStats(
                kind=kind,
                num_workers=int(getattr(source, "_num_workers", 0)),
                pin_memory=None if kind == "DeviceLoader" else pinned,
            )
        last = getattr(it, "_torchport_last_end", None)
        if last is None:
            stats.first_wait_s += end - start  # worker start-up, not steady-state waiting
        else:
            stats.add_batch(end - start, start - last)
        it._torchport_last_end = end
        record.count_step()
        self._observer.provenance.record_tree(batch, site)
