"""Library calls that are a porting mistake by themselves, seen where the program makes them.

- TP116: ``pack_padded_sequence`` given lengths on the device (they must stay on the CPU);
- TP113: ``torch.set_default_tensor_type`` (deprecated; a CUDA type puts every factory on it);
- TP107: ``torch.load`` without ``map_location`` that restores tensors onto an accelerator (the
  checkpoint then cannot load on a machine without one);
- TP203: ``.pin_memory()`` called by the program on its training thread, step after step;
- TP207: ``torch.cuda.empty_cache()`` in the loop (counted as the sync it is);
- TP401: ``nn.DataParallel`` made on an accelerator;
- TP402: DistributedDataParallel over an accelerator model without ``device_ids``, with no
  ``torch.cuda.set_device`` call seen (under ``run`` that is the whole program; a ``watch()``
  block sees only its own calls), so every rank shares one GPU.

Each wrapper does its bookkeeping and calls the original with the original arguments.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn import parallel
from torch.nn.utils import rnn

from torchport.findings import Fix
from torchport.rules import Rule
from torchport.rules.device import TorchLoadWithoutMapLocation
from torchport.rules.device_api import SetDefaultTensorType
from torchport.rules.device_ops import PackedLengthsOnDevice
from torchport.rules.distributed import DataParallelUsed, DdpWithoutDeviceIds
from torchport.rules.processes import DefaultDeviceWithoutRank
from torchport.rules.transfer import PinMemoryOnMainThread
from torchport.runtime.patching import Patches
from torchport.runtime.sites import Site, is_user_file, tensor_leaves, user_site

if TYPE_CHECKING:
    from torchport.runtime.observer import Observer

# A site that pins this many times is in a loop (as for syncs, see record.MIN_SYNCS_IN_LOOP).
MIN_PINS_IN_LOOP = 3


class ApiMonitor:
    """Wraps the entry points above for the length of a watch."""

    def __init__(self, observer: Observer) -> None:
        self._observer = observer
        self._patches = Patches()
        self._pins: Counter[Site] = Counter()
        self._pinned_at: dict[Site, int] = {}  # the forward-pass count at the last pin
        self._device_set = False

    def install(self) -> None:
        wrap = self._patches.wrap
        wrap(torch, "set_default_tensor_type", self._set_default_tensor_type)
        wrap(torch, "load", self._load)
        wrap(torch.Tensor, "pin_memory", self._pin_memory)
        wrap(torch.cuda, "empty_cache", self._empty_cache)
        wrap(torch.cuda, "set_device", self._set_device)
        wrap(torch, "set_default_device", self._set_default_device)
        wrap(rnn, "pack_padded_sequence", self._pack_padded)
        wrap(nn.DataParallel, "__init__", self._data_parallel)
        wrap(parallel.DistributedDataParallel, "__init__", self._ddp)

    def remove(self) -> None:
        self._patches.restore()

    @property
    def _on_accelerator(self) -> bool:
        return self._observer.record.accelerator is not None

    def _report(self, rule: type[Rule], message: str, site: Site | None, fix: str) -> None:
        location = None if site is None else site.location()
        self._observer.add(rule.finding(message, location, Fix(fix)), site)

    def _guarded(self, what: str, check: Any, *args: Any) -> None:
        try:
            check(*args)
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            self._observer.internal(what, internal)

    # --- the wrappers ---------------------------------------------------------------------------
    def _set_default_tensor_type(self, original: Any, kind: Any) -> None:
        self._guarded("noting set_default_tensor_type", self._note_default_type, kind)
        original(kind)

    def _note_default_type(self, kind: Any) -> None:
        name = (
            kind
            if isinstance(kind, str)
            else getattr(kind, "__module__", "") + "." + str(getattr(kind, "__name__", kind))
        )
        self._report(
            SetDefaultTensorType,
            f"torch.set_default_tensor_type({name}) is deprecated and global: every factory "
            "call, in libraries too, then allocates with that type",
            user_site("torch.set_default_tensor_type"),
            "pass device=... (and dtype=...) to the factories, or use torch.set_default_device "
            "and torch.set_default_dtype",
        )

    def _load(self, original: Any, *args: Any, **kwargs: Any) -> Any:
        loaded = original(*args, **kwargs)
        if kwargs.get("map_location") is None and len(args) < 2:
            self._guarded("checking torch.load", self._check_load, loaded)
        return loaded

    def _check_load(self, loaded: Any) -> None:
        devices = sorted({str(t.device) for t in tensor_leaves(loaded) if t.device.type != "cpu"})
        if not devices:
            return
        self._report(
            TorchLoadWithoutMapLocation,
            f"torch.load restored tensors onto {', '.join(devices)} because they were saved "
            "from there: on a machine without that device this load fails",
            user_site("torch.load"),
            'pass map_location: torch.load(path, map_location="cpu") (or map_location=device)',
        )

    def _pin_memory(self, original: Any, tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is threading.main_thread() and _called_by_user():
            self._guarded("counting pin_memory", self._count_pin)
        return original(tensor, *args, **kwargs)

    def _count_pin(self) -> None:
        site = user_site(".pin_memory()")
        # pins with no forward pass between them prepare data once (a list of pinned
        # batches built before training): one step's worth, not a pin at every step
        passes = self._observer.tracker.passes
        if site is None or self._pinned_at.get(site) == passes:
            return
        self._pinned_at[site] = passes
        self._pins[site] += 1
        if self._pins[site] == MIN_PINS_IN_LOOP and self._on_accelerator:
            self._report(
                PinMemoryOnMainThread,
                f".pin_memory() runs on the training thread at every step (seen "
                f"{MIN_PINS_IN_LOOP} times): pinning copies the batch once more before the "
                "copy to the device",
                site,
                "let the DataLoader pin on its own thread: DataLoader(..., pin_memory=True), "
                "or torchport.DeviceLoader",
            )

    def _empty_cache(self, original: Any) -> None:
        if self._on_accelerator:
            self._observer.on_sync("torch.cuda.empty_cache")
        original()

    def _set_device(self, original: Any, device: Any) -> None:
        self._device_set = True
        original(device)

    def _set_default_device(self, original: Any, device: Any) -> None:
        self._guarded("checking set_default_device", self._check_default_device, device)
        original(device)
        on_host = device is None or torch.device(device).type == "cpu"
        site = None if on_host else user_site("torch.set_default_device")
        self._observer.explainer.default_device_set_at = site

    def _check_default_device(self, device: Any) -> None:
        import torch.distributed as dist

        chosen = torch.device(device) if isinstance(device, str | torch.device) else None
        if chosen is None or chosen.type != "cuda" or chosen.index is not None:
            return
        if self._device_set or not (dist.is_available() and dist.is_initialized()):
            return
        self._report(
            DefaultDeviceWithoutRank,
            f'torch.set_default_device("cuda") in a distributed process (world size '
            f"{dist.get_world_size()} here) that never called torch.cuda.set_device: `cuda` is "
            "the current device, GPU 0, for every rank",
            user_site("torch.set_default_device"),
            'call torch.cuda.set_device(local_rank) first, or set_default_device(f"cuda:'
            '{local_rank}")',
        )

    def _pack_padded(self, original: Any, padded: Any, lengths: Any, *a: Any, **k: Any) -> Any:
        if isinstance(lengths, torch.Tensor) and lengths.device.type != "cpu":
            self._report(
                PackedLengthsOnDevice,
                f"pack_padded_sequence got its lengths on {lengths.device}: it reads them on "
                "the host and refuses device lengths",
                user_site("pack_padded_sequence"),
                "keep the lengths on the CPU (pass lengths.cpu(), or do not move them)",
            )
        return original(padded, lengths, *a, **k)

    def _data_parallel(self, original: Any, wrapper: Any, *args: Any, **kwargs: Any) -> None:
        original(wrapper, *args, **kwargs)
        if self._on_accelerator:
            self._report(
                DataParallelUsed,
                "nn.DataParallel drives every GPU from one process (and copies the model to "
                "each GPU on every step); DistributedDataParallel under torchrun is the "
                "supported way to use several GPUs",
                user_site("nn.DataParallel"),
                "use DistributedDataParallel with one process per GPU (torchrun), or no "
                "wrapper on one GPU",
            )

    def _ddp(self, original: Any, wrapper: Any, *args: Any, **kwargs: Any) -> None:
        self._guarded("checking DistributedDataParallel", self._check_ddp, args, kwargs)
        original(wrapper, *args, **kwargs)

    def _check_ddp(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        module = args[0] if args else kwargs.get("module")
        device_ids = args[1] if len(args) > 1 else kwargs.get("device_ids")
        if device_ids is not None or self._device_set or not isinstance(module, nn.Module):
            return
        weight = next(module.parameters(), None)
        if weight is None or weight.device.type != "cuda":
            return
        self._report(
            DdpWithoutDeviceIds,
            f"DistributedDataParallel wraps a model on {weight.device} without device_ids, and "
            "no torch.cuda.set_device call was seen: under torchrun every rank would use that "
            "one GPU",
            user_site("DistributedDataParallel"),
            'local_rank = int(os.environ["LOCAL_RANK"]); torch.cuda.set_device(local_rank); '
            "model.to(local_rank); DDP(model, device_ids=[local_rank])",
        )


def _called_by_user() -> bool:
    """Whether the frame that called the wrapped method is the user's (not a library's)."""
    frame = sys._getframe(3)  # _called_by_user <- _pin_memory <- patched <- the caller
    return is_user_file(frame.f_code.co_filename)
