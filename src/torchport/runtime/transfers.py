"""Handlers for the calls that move tensors between host and device (and for ``backward``).

Each copy is counted at the user's line with its direction, bytes, pinned or pageable source and
``non_blocking`` flag; a device-to-host copy is a synchronization unless it is non-blocking, in
which case its result is watched until the next synchronization (read-before-sync).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
from torch.nn.parameter import is_lazy
from torch.utils.weak import WeakIdKeyDictionary

import torchport.transfer
from torchport.findings import Fix, Severity
from torchport.rules.device import CpuTensorThenMoved
from torchport.rules.dtype import Float64OnAccelerator
from torchport.rules.transfer import (
    HostConversionBeforeCopy,
    NonBlockingCopyFromPageable,
    PinnedSourceOverwrittenInFlight,
)
from torchport.runtime import holders, samplers, simtensor
from torchport.runtime.failure import StrictFindingError
from torchport.runtime.sites import Site, user_site

if TYPE_CHECKING:
    from torchport.runtime.observer import Handler, Observer

T = torch.Tensor
# Factories that make data where they run: made on the host and moved on the same line, they
# could have been made on the device (torch.tensor and from_numpy bring data from the host).
_GENERATORS = {
    "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.rand", "torch.randn",
    "torch.randint", "torch.randperm", "torch.arange", "torch.linspace", "torch.logspace",
    "torch.eye", "torch.normal", "torch.tril_indices", "torch.triu_indices",
    "torch.hann_window", "torch.hamming_window", "torch.bartlett_window",
    "torch.blackman_window", "torch.kaiser_window",
}  # fmt: skip
# tensors that may share memory with a NumPy array, written where torch does not see it
_SHARES_NUMPY = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.asarray"})
# A line that does it this often is in a loop (as for syncs, record.MIN_SYNCS_IN_LOOP).
MIN_MADE_THEN_MOVED = 3
# Below this many elements a float64 tensor on the device is reported as info, not a warning.
SMALL_FLOAT64 = 8192
# writes into a host tensor that a non_blocking copy may still be reading
HOST_WRITES = frozenset({T.__setitem__, T.copy_, T.fill_, T.zero_})
_SYNC_NAMES = {"Tensor.to": ".to('cpu')", "Tensor.cpu": ".cpu()", "Tensor.copy_": ".copy_()"}


def parse_to(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, bool, bool]:
    """(device, dtype, non_blocking, copy) from any of ``Tensor.to``'s three signatures."""
    rest = list(args[1:])
    device: Any = None
    dtype: Any = None
    flags: list[Any] = []
    if rest and isinstance(rest[0], torch.Tensor):
        device, dtype, flags = rest[0].device, rest[0].dtype, rest[1:]
    elif rest and isinstance(rest[0], torch.dtype):
        dtype, flags = rest[0], rest[1:]
    elif rest:
        device = rest[0]
        if len(rest) > 1 and isinstance(rest[1], torch.dtype):
            dtype, flags = rest[1], rest[2:]
        else:
            flags = rest[1:]
    device = kwargs.get("device", device)
    dtype = kwargs.get("dtype", dtype)
    non_blocking = bool(kwargs.get("non_blocking", flags[0] if flags else False))
    copy = bool(kwargs.get("copy", flags[1] if len(flags) > 1 else False))
    return device, dtype, non_blocking, copy


class TransferHandlers:
    """``Tensor.to``/``.cuda``/``.cpu``/``.copy_`` and ``.backward``, bound to one Observer."""

    def __init__(self, observer: Observer) -> None:
        self.o = observer
        self._table: dict[Any, Handler] = {
            T.to: self._to,
            T.cuda: self._cuda,
            T.cpu: self._cpu,
            T.copy_: self._copy,
            T.backward: self._backward,
        }
        self._made_here: Counter[Site] = Counter()
        self._converted_here: Counter[Site] = Counter()
        # host tensor -> the line that copies it to the device, its version then, the step
        # of the first of those copies and their number
        self._copies_of: WeakIdKeyDictionary = WeakIdKeyDictionary()

    def handler_for(self, func: Any) -> Handler | None:
        return self._table.get(func)

    def _to(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tensor = args[0]
        device, dtype, non_blocking, copy = parse_to(args, kwargs)
        sim = self.o.sim
        target = sim.resolve(device) if sim is not None and device is not None else None
        if target is not None:
            out = _with_dtype(simtensor.to_simulated(tensor, target), dtype)
            if copy and out is tensor:
                out = out.clone()
        elif (
            isinstance(tensor, simtensor.SimTensor)
            and device is not None
            and torch.device(device).type == "cpu"
        ):
            out = _with_dtype(simtensor.to_host(tensor), dtype)
        else:
            out = self._run(func, args, kwargs)
        if device is not None and out is tensor and tensor.is_cpu and self._accelerated():
            self._kept_on_host(tensor)
        self._moved(tensor, out, non_blocking, "Tensor.to")
        return out

    def _cuda(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tensor = args[0]
        device = args[1] if len(args) > 1 else kwargs.get("device")
        non_blocking = bool(args[2] if len(args) > 2 else kwargs.get("non_blocking", False))
        sim = self.o.sim
        if sim is not None and sim.kind == "cuda":
            target = sim.resolve("cuda" if device is None else device)
            out = simtensor.to_simulated(tensor, target or sim.default)
        else:
            out = self._run(func, args, kwargs)
        self._moved(tensor, out, non_blocking, "Tensor.cuda")
        return out

    def _cpu(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tensor = args[0]
        if isinstance(tensor, simtensor.SimTensor):
            out = simtensor.to_host(tensor)
        else:
            out = self._run(func, args, kwargs)
        self._moved(tensor, out, False, "Tensor.cpu")
        return out

    def _copy(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        out = self.o._op(func, args, kwargs)
        if len(args) > 1 and isinstance(args[1], torch.Tensor):
            non_blocking = bool(args[2] if len(args) > 2 else kwargs.get("non_blocking", False))
            self._moved(args[1], args[0], non_blocking, "Tensor.copy_")
        return out

    def _backward(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.o.record.count_step()
        return self.o._op(func, args, kwargs)

    def _run(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.o.has_pending:
            self.o._check_pending(args)
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            self.o.explain(exc, func, args, kwargs)
            raise

    def _moved(self, source: torch.Tensor, out: Any, non_blocking: bool, call: str) -> None:
        try:
            self._count_copy(source, out, non_blocking, call)
        except StrictFindingError:
            raise
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            self.o.internal("counting a copy", internal)

    def _count_copy(self, source: torch.Tensor, out: Any, non_blocking: bool, call: str) -> None:
        if not isinstance(out, torch.Tensor):
            return
        src, dst = source.device, out.device
        if src == dst:
            return
        site = user_site(call)
        if site is None:
            return
        nbytes = source.numel() * source.element_size()
        if src.type == "cpu":
            pinned = bool(source.is_pinned())
            if not non_blocking and _widened(source, out):
                # converted on the host before the copy (see TP253): the wide tensor crosses
                nbytes = out.numel() * out.element_size()
                self._converted_on_host(source, out, site)
            self.o.record.add_transfer(site, "host->device", pinned, non_blocking, nbytes)
            self._host_to_device_checks(source, dst, site, pinned, non_blocking)
            if pinned and non_blocking:
                self._note_inflight(source, site)
            if not isinstance(source, torch.nn.Parameter):  # a weak reference stops Module.to
                self.o.provenance.record_copy(source, site)  # swapping it (see StateSites)
        elif dst.type == "cpu":
            self.o.record.add_transfer(site, "device->host", False, non_blocking, nbytes)
            if non_blocking:
                self.o.pending[out] = site
                self.o.has_pending = True
            else:
                self.o.on_sync(_SYNC_NAMES[call], source)
        else:
            self.o.record.add_transfer(site, "device->device", False, non_blocking, nbytes)
        if call != "Tensor.copy_" or self.o.provenance.get(out) is None:
            # copy_ writes into a tensor made elsewhere: where it was made is where to fix it
            self.o.provenance.record(out, site)

    def _accelerated(self) -> bool:
        return self.o.sim is not None or self.o.record.accelerator is not None

    def _kept_on_host(self, source: torch.Tensor) -> None:
        """A ``.to(device)`` that left a host tensor on the host while an accelerator is in use:
        where it was "moved", for a device mismatch it meets later (the device was read from a
        module before the module moved)."""
        if isinstance(source, torch.nn.Parameter) or is_lazy(source):
            # Module.to's own no-op: it swaps parameters, and a lazy module's weight when it
            # is made, which a weak reference to them would stop
            return
        site = user_site("Tensor.to")
        if site is not None:
            self.o.provenance.record_kept(source, site)

    def _note_inflight(self, source: torch.Tensor, site: Site) -> None:
        """The pinned buffer a non_blocking copy reads later: on a real GPU with an event
        recorded after the copy, to tell whether it is still running when the buffer is
        written (the simulation copies at once: there, only a sync ends the copy)."""
        event = None
        if self.o.sim is None and torch.cuda.is_available():
            event = torch.cuda.Event()  # type: ignore[no-untyped-call]
            event.record()
        self.o.inflight[_buffer(source)] = (site, event)

    def overwrite_checked(self, handler: Any) -> Any:
        """``handler`` for a write into a host tensor, checked against the copies in flight."""

        def checked(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if self.o.inflight and args and type(args[0]) is torch.Tensor and args[0].is_cpu:
                try:
                    self._check_overwrite(args[0])
                except StrictFindingError:
                    raise
                except Exception as internal:  # noqa: BLE001 - bookkeeping never fails it
                    self.o.internal("checking a write into a pinned buffer", internal)
            return handler(func, args, kwargs)

        return checked

    def _check_overwrite(self, tensor: torch.Tensor) -> None:
        key = _buffer(tensor)
        found = self.o.inflight.get(key)  # type: ignore[no-untyped-call]
        if found is None:
            return
        copied, event = found
        del self.o.inflight[key]  # one finding per copy; a copy the GPU has read is done
        if event is not None and event.query():
            return
        site = user_site("write")
        self.o.add(
            PinnedSourceOverwrittenInFlight.finding(
                f"this pinned buffer is written while the non_blocking copy from it at {copied} "
                "may still be reading it (no synchronization since): the device can receive "
                "the new values, or a mix",
                None if site is None else site.location(),
                Fix(
                    "wait for the copy before reusing the buffer (record a torch.cuda.Event "
                    "after the copy and synchronize it first), or keep one buffer per step"
                ),
                related=(copied.location(),),
            ),
            site,
        )

    def _host_to_device_checks(
        self, source: torch.Tensor, dst: torch.device, site: Site, pinned: bool, non_blocking: bool
    ) -> None:
        if non_blocking and not pinned:
            self.o.add(
                NonBlockingCopyFromPageable.finding(
                    f"non_blocking copy to {dst} from pageable memory: it cannot overlap with "
                    "compute",
                    site.location(),
                    Fix(
                        "pin the source (DataLoader(pin_memory=True), or use "
                        "torchport.DeviceLoader), or drop non_blocking=True"
                    ),
                ),
                site,
            )
        if not pinned and self.o.unpinned:
            samplers.note_copy(self.o, source, dst)
        origin = self.o.provenance.get(source)
        if origin is not None and origin.call in _GENERATORS and origin.line == site.line:
            self._made_then_moved(origin, dst, site)
        elif not (self.o.tracker.stack and self._attribute_moved(source, dst, site)):
            self._constant_moved(source, dst, site, origin, pinned)
        if source.dtype == torch.float64 and not _issued_by_torchport_transfer():
            origin = self.o.provenance.get(source)
            made = f"; it was created at {origin} by {origin.call}" if origin else ""
            if origin is None or origin.call == "DataLoader batch":
                made += self._float64_makers()
            self.o.add(
                Float64OnAccelerator.finding(
                    f"a float64 tensor of shape {tuple(source.shape)} is moved to {dst}{made}",
                    site.location(),
                    Fix(
                        "convert it to float32 where it is made (.float(), or np.float32 data), "
                        "or pass dtype=torch.float32 to .to()"
                    ),
                    related=(origin.location(),) if origin is not None else (),
                    # a small table (a diffusion schedule, constants) costs little in float64
                    severity=Severity.INFO if source.numel() < SMALL_FLOAT64 else None,
                ),
                site,
            )

    def _converted_on_host(self, source: torch.Tensor, out: torch.Tensor, site: Site) -> None:
        """TP253 once a line has converted and copied MIN_MADE_THEN_MOVED times."""
        self._converted_here[site] += 1
        if self._converted_here[site] != MIN_MADE_THEN_MOVED:
            return
        ratio = out.element_size() // source.element_size()
        wide, narrow = _dtype_name(out.dtype), _dtype_name(source.dtype)
        self.o.add(
            HostConversionBeforeCopy.finding(
                f"a {narrow} tensor of shape {tuple(source.shape)} is converted to {wide} on "
                f"the CPU and then copied to {out.device}, at every step (seen "
                f"{MIN_MADE_THEN_MOVED} times): a blocking copy converts before it copies, so "
                f"{ratio}x the bytes cross",
                site.location(),
                Fix(f"copy the {narrow} tensor, then convert on the device: .to(device).float()"),
            ),
            site,
        )

    def _made_then_moved(self, origin: Site, dst: torch.device, site: Site) -> None:
        """TP104 once a line has made a host tensor and moved it MIN_MADE_THEN_MOVED times."""
        if origin.path != site.path:
            return
        self._copied_every_step(
            site,
            f"{origin.call} makes a tensor on the CPU that is copied to {dst} right away",
            f"create it on the device: {origin.call}(..., device=device)",
        )

    def _copied_every_step(
        self, site: Site, what: str, fix: str, related: tuple[Site, ...] = ()
    ) -> None:
        """TP104 once ``site`` has copied MIN_MADE_THEN_MOVED times (not before: a single copy
        is set-up, not a step's)."""
        self._made_here[site] += 1
        if self._made_here[site] != MIN_MADE_THEN_MOVED:
            return
        self.o.add(
            CpuTensorThenMoved.finding(
                f"{what}, at every step (seen {MIN_MADE_THEN_MOVED} times)",
                site.location(),
                Fix(fix),
                related=tuple(r.location() for r in related),
            ),
            site,
        )

    def numpy_indices(self, dst: torch.device) -> None:
        """TP104 once a line has indexed a device tensor with NumPy indices (drawn on the host,
        ``np.random.choice``) MIN_MADE_THEN_MOVED times: each is a copy to the device."""
        site = user_site("tensor[numpy indices]")
        if site is not None:
            self._copied_every_step(
                site,
                f"a tensor on {dst} is indexed with NumPy indices, which are copied to the "
                "device first",
                "draw the indices on the device: torch.randint(n, (k,), device=device) or "
                "torch.randperm(n, device=device)[:k]",
            )

    def _constant_moved(
        self,
        source: torch.Tensor,
        dst: torch.device,
        site: Site,
        origin: Site | None,
        pinned: bool,
    ) -> None:
        """TP104 for one host tensor, unchanged since (its version counter says so), that the
        same line copies to the device MIN_MADE_THEN_MOVED times, at least every other step: a
        lookup table kept on the host (a diffusion schedule read at every step). A dataset
        copied once an epoch, batch after batch, is left alone."""
        if pinned or (origin is not None and origin.call in _SHARES_NUMPY):
            return  # a staging buffer, refilled in place (through NumPy: no version counter)
        if isinstance(source, torch.nn.Parameter):
            return  # Module.to moves it, and cannot swap a weakly referenced one
        seen = self._copies_of.get(source)  # type: ignore[no-untyped-call]
        version, step = source._version, self.o.record.step
        if seen is None or seen[0] != site or seen[1] != version:
            self._copies_of[source] = (site, version, step, 1)
            return
        copies = seen[3] + 1
        self._copies_of[source] = (site, version, seen[2], copies)
        if copies != MIN_MADE_THEN_MOVED or step - seen[2] > 2 * (copies - 1):
            return  # not yet, or further apart than every other backward pass
        made = f" (made at {origin})" if origin else ""
        self.o.add(
            CpuTensorThenMoved.finding(
                f"the same host tensor{made}, unchanged, is copied to {dst} again at every "
                f"step (seen {copies} times)",
                site.location(),
                Fix(
                    "keep a copy on the device: move it once (or register it as a buffer of "
                    "the module that reads it, so that model.to(device) moves it)"
                ),
                related=(origin.location(),) if origin is not None else (),
            ),
            site,
        )

    def _attribute_moved(self, source: torch.Tensor, dst: torch.device, site: Site) -> bool:
        """TP104 for a plain tensor attribute of a running module (not a buffer: `.to()` on
        the model leaves it) that ``forward`` copies to the device at every call (False: the
        tensor is no attribute of a running module)."""
        for module in reversed(self.o.tracker.stack):
            name = next((k for k, v in vars(module).items() if v is source), None)
            if name is None:
                continue
            due = self._made_here[site] == MIN_MADE_THEN_MOVED - 1  # read the source once
            self._copied_every_step(
                site,
                f"`{name}`, a plain tensor attribute of {type(module).__name__} (not a buffer), "
                f"is copied to {dst} by forward",
                f'register it as a buffer: self.register_buffer("{name}", tensor, '
                "persistent=False); model.to(device) then moves it once",
                tuple(holders.assignment_sites(module, name)) if due else (),
            )
            return True
        return False

    def _float64_makers(self) -> str:
        top = self.o.record.float64_origins.most_common(1)
        if not top:
            return ""
        site, count = top[0]
        return f" (float64 tensors were made {count}x at {site} by {site.call})"


def _widened(source: torch.Tensor, out: torch.Tensor) -> bool:
    """An integer or boolean tensor made a wider floating one by the copy (uint8 images to
    float32), which a blocking copy converts on the source device first."""
    return (
        out.is_floating_point()
        and not (source.is_floating_point() or source.is_complex())
        and out.element_size() > source.element_size()
    )


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _with_dtype(tensor: torch.Tensor, dtype: Any) -> torch.Tensor:
    return tensor if dtype is None else tensor.to(dtype)


_TRANSFER_PACKAGE = str(Path(torchport.transfer.__file__).parent)


def _issued_by_torchport_transfer() -> bool:
    """Whether DeviceLoader or to_device made this copy.

    They cast on the device right after the copy, so a float64 tensor in flight is their plan,
    not the user's mistake; a float64 tensor that still reaches a layer is reported there.
    """
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(_TRANSFER_PACKAGE):
            return True
        frame = frame.f_back
    return False


def _buffer(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor a view was taken from (a slice of a staging buffer is that buffer)."""
    base = tensor._base
    return tensor if base is None else base
