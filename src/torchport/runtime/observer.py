"""The observer: one TorchFunctionMode that sees every torch call of the user's program.

Each function is classified once (a dict look-up afterwards) into a handler: factories record
where tensors are made, transfers and syncs fill the inventories, a few binary ops check dtype
promotion, and every other op just runs, with its errors explained. In observe mode nothing is
changed: handlers call the original function with the original arguments. Under ``--simulate``
the factory and transfer handlers route the simulated device to :mod:`.simtensor`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _device as torch_device_mode
from torch.utils.weak import WeakIdKeyDictionary

from torchport.findings import Finding, Fix, Severity
from torchport.rules.dtype import DtypeErrorAtRunTime, ImplicitFloat64Promotion, NonFiniteOpOutput
from torchport.rules.transfer import NonBlockingHostReadBeforeSync
from torchport.runtime import (
    accumulate,
    halfrange,
    losses,
    simdevices,
    simgenerator,
    simhost,
    siminside,
    simkernels,
    simtensor,
    syncs,
    transfers,
)
from torchport.runtime.causes import library_cause
from torchport.runtime.explain import Explainer, add_line
from torchport.runtime.failure import StrictFindingError
from torchport.runtime.modules import ModuleTracker
from torchport.runtime.patching import Patches
from torchport.runtime.record import Record
from torchport.runtime.simulate import Simulation
from torchport.runtime.sites import Provenance, Site, call_name, user_site
from torchport.runtime.steady import SteadyState

__all__ = ["Observer", "Options", "StrictFindingError"]

Handler = Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]
T = torch.Tensor
_FACTORIES = {
    torch.tensor, torch.as_tensor, torch.asarray, torch.zeros, torch.ones, torch.empty,
    torch.full, torch.rand, torch.randn, torch.randint, torch.randperm, torch.arange,
    torch.linspace, torch.logspace, torch.eye, torch.zeros_like, torch.ones_like,
    torch.empty_like, torch.full_like, torch.rand_like, torch.randn_like, torch.randint_like,
    torch.empty_strided, torch.scalar_tensor, torch.normal, torch.tril_indices,
    torch.triu_indices, torch.hann_window, torch.hamming_window, torch.bartlett_window,
    torch.blackman_window, torch.kaiser_window,
    T.new_zeros, T.new_ones, T.new_empty, T.new_full, T.new_tensor,
}  # fmt: skip
_FROM_DATA = {torch.tensor, torch.as_tensor, torch.asarray, T.new_tensor}
_SYNC_KINDS: dict[Any, str] = {
    T.item: ".item()", T.tolist: ".tolist()", T.__bool__: "bool(tensor)",
    T.__int__: "int(tensor)", T.__float__: "float(tensor)", T.__format__: "format(tensor)",
    T.__index__: "a tensor as an index (range, slice)",
    T.__repr__: "print(tensor)", T.nonzero: ".nonzero()", torch.nonzero: "torch.nonzero",
    T.numpy: ".numpy()", T.__array__: "numpy.asarray(tensor)",
    # ops whose output size depends on the values: the host learns it from the device
    torch.unique: "torch.unique", T.unique: ".unique()", T.unique_consecutive: ".unique()",
    torch.unique_consecutive: "torch.unique_consecutive", torch.bincount: "torch.bincount",
    T.bincount: ".bincount()", torch.masked_select: "torch.masked_select",
    T.masked_select: ".masked_select()", torch.argwhere: "torch.argwhere",
    T.argwhere: ".argwhere()",
}  # fmt: skip
_PROMOTING = {
    torch.add, torch.sub, torch.mul, torch.div, torch.true_divide, T.add, T.sub, T.mul, T.div,
    T.__radd__, T.__rsub__, T.__rmul__, T.__truediv__, T.__rtruediv__,
}  # fmt: skip
_FLOATS = {torch.float32, torch.float64}
# The factories `torch.set_default_device` applies to (torch's own list; private, so looked up
# with a fallback: without it a simulated default device reaches no factory).
_DEFAULT_DEVICE_TAKERS: frozenset[Any] = frozenset(
    getattr(torch_device_mode, "_device_constructors", frozenset)()
)
# Joining ops whose result takes the widest dtype of a list: a float32 cache concatenated with
# float16 keys hands float32 on (a later dtype error then names where the cache was made).
_JOINING = {torch.cat, torch.concat, torch.concatenate, torch.stack}
# Module.to's argument parser: it makes nothing, and its ``device=`` keyword must reach it as
# given (routed as a factory's, the simulated device became the CPU: model.to(device=...)).
_PARSE_TO = torch._C._nn._parse_to
# Questions about a tensor's metadata: no compute on any device, so no op of the model's
# (DataParallel asks is_complex() of each CPU batch it scatters to the GPUs).
_METADATA = {
    T.size, T.stride, T.dim, T.ndimension, T.numel, T.nelement, T.element_size,
    T.is_complex, T.is_floating_point, T.is_contiguous, T.storage_offset, T.get_device,
    T.data_ptr, T.is_signed, torch.numel, torch.is_complex, torch.is_floating_point,
}  # fmt: skip


@dataclass(frozen=True)
class Options:
    check_finite: bool = False
    strict: bool = False
    # After each model's first steps, run most steps with the mode off (see steady.py).
    steady_state: bool = True


class Observer(TorchFunctionMode):
    """Sees every torch call; records, checks, explains, and (when simulating) routes devices."""

    def __init__(
        self, record: Record, provenance: Provenance, tracker: ModuleTracker,
        simulation: Simulation | None, options: Options,
    ) -> None:  # fmt: skip
        super().__init__()
        self.record = record
        self.provenance = provenance
        self.tracker = tracker
        self.sim = simulation
        self.options = options
        self.explainer = Explainer(provenance, tracker)
        # Non-blocking device->host results not yet synchronized; the flag spares the hot path
        # a len() of the weak dictionary on every op.
        self.pending: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self.has_pending = False
        # Pinned host buffers (the tensor a view was taken from) a non_blocking host->device
        # copy may still be reading: the copy's site and, on a real GPU, an event recorded
        # after it. Weak: a buffer freed and its memory reused is another buffer (CUDA's host
        # allocator waits for the copy before it reuses pinned memory).
        self.inflight: WeakIdKeyDictionary = WeakIdKeyDictionary()
        # Tensors of batches from DataLoaders that do not pin -> their loader's record (filled
        # by samplers.SamplerMonitor, read at host-to-device copies).
        self.unpinned: WeakIdKeyDictionary = WeakIdKeyDictionary()
        # True while a block runs unobserved (see `unobserved`); read by the from_numpy patch.
        self.quiet = False
        # Set when the watch ends. Threads it started may outlive it (a thread pool's workers)
        # with this mode still pushed: from then on it only passes calls through.
        self.closed = False
        self.count_ops = record.accelerator is not None
        self._check_finite = options.check_finite
        # Under the simulation every tensor is a host one: a float16 result can be read for
        # overflow at no sync (the general --check-finite covers it when asked for).
        self.watch_overflow = simulation is not None and not options.check_finite
        self._handlers: dict[Any, Handler] = {}
        self.transfers = transfers.TransferHandlers(self)
        self.steady = SteadyState(self)
        self.accumulation = accumulate.Accumulation(self)
        self.deferred = halfrange.Deferred()  # TP355 on real CUDA tensors, read at the end
        # under --simulate: the program's autograd Functions' backward runs observed
        self._backward_patches: Patches | None = None

    def __enter__(self) -> Any:  # Any: watch.py takes it as an install step returning None
        super().__enter__()  # type: ignore[no-untyped-call]
        if not self.steady.installed:
            self.steady.install()
        if self.sim is not None and self._backward_patches is None:
            self._backward_patches = siminside.observe_backward(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._backward_patches is not None:
            self._backward_patches.restore()
            self._backward_patches = None
        paused = self.steady.paused
        self.steady.close()
        if not paused:  # paused, the mode is off the stack already
            super().__exit__(*exc_info)  # type: ignore[no-untyped-call]

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        if self.closed:
            return func(*args, **(kwargs or {}))
        handler = self._handlers.get(func)
        if handler is None:
            handler = self._classify(func)
        return handler(func, args, kwargs or {})

    @contextlib.contextmanager
    def unobserved(self) -> Iterator[None]:
        """Run a block as if torchport were absent: its torch calls skip this mode entirely.

        Only possible while this mode is the innermost one (it always is, unless the program
        pushed a mode of its own); otherwise the block simply runs observed.
        """
        current = getattr(torch.overrides, "_get_current_function_mode", None)
        pop = getattr(torch.overrides, "_pop_mode_temporarily", None)
        if self.steady.paused:
            pop = contextlib.nullcontext  # off already; quiet keeps the probes out too
        elif current is None or pop is None or current() is not self:
            yield
            return
        self.quiet = True
        try:
            with pop():
                yield
        finally:
            self.quiet = False

    def simulated_device_uses(self) -> int:
        """How often the program has named the simulated device so far (0 when observing)."""
        return 0 if self.sim is None else self.sim.uses

    def _classify(self, func: Any) -> Handler:
        name = getattr(func, "__name__", "")
        handler: Handler
        if name in ("__get__", "__set__") or func in _METADATA or func is _PARSE_TO:
            handler = _passthrough
        elif self.sim is not None and isinstance(func, torch._ops.OpOverload):
            # the simulation running an op on a SimTensor's host data, called back from C++
            # (DDP's buffer broadcast): on a GPU these never reach Python, so never count them
            handler = _passthrough
        elif func in _FACTORIES:
            handler = self._factory
        elif func in _SYNC_KINDS:
            handler = self._sync
        elif func in _PROMOTING:
            handler = self._promoting
        elif func in _JOINING:
            handler = self._joining
        else:
            handler = self.transfers.handler_for(func) or self._op
            if handler == self._op and self.sim is not None and simhost.is_composite(func):
                handler = self._composite
            if func in losses.LOSSES:
                handler = losses.checked(self, func, handler)
            elif func is T.__getitem__:
                handler = functools.partial(syncs.masked_index, self, handler)
            elif func is T.__setitem__:
                handler = halfrange.setitem_checked(self, handler)
        if self.sim is not None and func in simtensor.HOST_TOLERANT:
            handler = functools.partial(simtensor.host_arguments_onto_device, handler)
        if self.sim is not None and func in simkernels.HALF_FUNCTIONS:
            handler = simkernels.half_checked(handler)
        if self.sim is not None and func in simkernels.FFT_FUNCTIONS:
            handler = simkernels.fft_checked(handler)
        if self.sim is not None and func in simkernels.CUDA_FLOAT32:
            handler = simkernels.cuda_autocast_float32(handler)
        elif self.sim is not None and func in simkernels.CPU_FLOAT32_ONLY:
            handler = simkernels.cuda_autocast_as_is(handler)
        if func in transfers.HOST_WRITES:
            handler = self.transfers.overwrite_checked(handler)
        if func in accumulate.ADDITIONS:
            handler = self.accumulation.checked(handler)
        elif func in halfrange.CASTS:
            handler = halfrange.cast_checked(self, handler)
        with contextlib.suppress(TypeError):  # an unhashable callable: classified every time
            self._handlers[func] = handler
        return handler

    # --- generic ops -------------------------------------------------------------------------
    def _op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.sim is not None:
            if "device" in kwargs:
                return self._factory(func, args, kwargs)
            if kwargs.get("generator") is not None:
                # here, not in dispatch: only the program's own object says it is a device one
                device = next((a.device for a in args if isinstance(a, simtensor.SimTensor)), None)
                if device is not None:
                    self._checked_generator(func, args, kwargs, device)
                elif any(isinstance(a, torch.Tensor) for a in args):
                    self._checked_generator(func, args, kwargs, None)
        if self.has_pending:
            self._check_pending(args)
        try:
            out = func(*args, **kwargs)
        except Exception as exc:
            if not (self.sim is not None and siminside.reached_real_cuda(func, exc)):
                self.explain(exc, func, args, kwargs)
                raise
            out = self._observed_inside(func, args, kwargs)
        try:
            if self.count_ops:
                self._inherit(args, out)
            if self.count_ops and self.tracker.stack:
                self._count(args)
            if self._check_finite:
                self._finite(func, args, out)
            elif self.watch_overflow and getattr(out, "dtype", None) is torch.float16:
                halfrange.check_overflow(self, func, args, kwargs, out)
        except StrictFindingError:
            raise
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            self.internal("counting an op", internal)
        return out

    def _observed_inside(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            with siminside.observing(self, func):
                return func(*args, **kwargs)
        except Exception as exc:
            self.explain(exc, func, args, kwargs)
            raise

    def _composite(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A composite op under simulation: host tensors it made inside are on the device.

        C++ makes them from a simulated tensor's options, which name its CPU storage; on a GPU
        they are on the device (see simhost). Results the user's own host tensors lead to are
        not touched: the op must have been given device tensors only.
        """
        out = self._op(func, args, kwargs)
        if simhost.has_host_tensor(out):
            device = simhost.given_device(func, args, kwargs)
            if device is not None:
                out = simtensor.onto(out, device, simhost.host_results(func))
        return out

    def explain(self, exc: BaseException, func: Any, args: tuple[Any, ...], kwargs: Any) -> None:
        """Enrich the op's error in place; a failure here adds one line and never replaces it."""
        try:
            site = user_site(call_name(func))
            finding = self.explainer.explain(exc, func, args, kwargs, site)
            # a dtype failure already told by a closer rule at this line (an integer input to
            # a float layer, a loss target of the wrong dtype) is not told twice
            told = finding is not None and finding.code == DtypeErrorAtRunTime.code
            if finding is not None and not (told and self.record.reported_at(site, "TP3")):
                self.record.add_finding(finding, site)
        except Exception as internal:  # noqa: BLE001 - the user's exception must win
            self.internal("explaining an error", internal)
            add_line(
                exc, f"torchport could not explain this: {type(internal).__name__}: {internal}"
            )

    def internal(self, where: str, exc: BaseException) -> None:
        """torchport's own failure: recorded for the report, never raised into the program."""
        with contextlib.suppress(Exception):
            self.record.add_internal_error(where, exc)

    def _inherit(self, args: tuple[Any, ...], out: Any) -> None:
        """A host tensor computed from one of known origin (``torch.stack`` of ``randperm``s,
        a hidden state re-indexed inside an RNN) keeps that origin: a device error names the
        user's line that made it. Only with an accelerator, where host results are few."""
        if type(out) is not torch.Tensor or not out.is_cpu:  # is_cpu: 5x cheaper than .device
            return
        first = _first_argument(args)
        if isinstance(first, torch.Tensor) and self.provenance.get(out) is None:
            site = self.provenance.get(first)
            if site is not None:
                self.provenance.record(out, site)

    def _count(self, args: tuple[Any, ...]) -> None:
        first = _first_argument(args)
        if not isinstance(first, torch.Tensor):
            return
        kind = first.device.type
        if kind == "cpu" and not first.is_floating_point():
            return  # lengths, indices and masks: bookkeeping torch keeps on the host on purpose
        self.record.ops_by_device[kind] += 1
        if kind == "cpu":
            cpu_ops = self.record.ops_by_device["cpu"]
            # Sites are sampled after the first few thousand CPU ops to bound the cost.
            if cpu_ops < 4096 or cpu_ops % 64 == 0:
                site = user_site()
                if site is not None:
                    self.record.cpu_op_sites[site] += 1

    def _finite(self, func: Any, args: tuple[Any, ...], out: Any) -> None:
        if not isinstance(out, torch.Tensor) or not out.is_floating_point():
            return
        if bool(torch.isfinite(simtensor.plain(out)).all()):
            return
        for arg in args:
            floating = isinstance(arg, torch.Tensor) and arg.is_floating_point()
            if floating and not bool(torch.isfinite(simtensor.plain(arg)).all()):
                return  # inf/NaN came in; the first op that made them was reported (or unseen)
        dtype = str(out.dtype).replace("torch.", "")
        self._check_finite = False
        self.report_non_finite(
            func,
            f"produced inf/NaN ({dtype}) from finite inputs; this is the first op of the run "
            "to do so",
            "compute this op in float32 (or bfloat16), or scale its inputs down",
            dtype,
        )

    def report_non_finite(self, func: Any, what: str, fix: str, dtype: str) -> None:
        """TP351 at the user's line that called ``func``, with the module running it."""
        site = user_site(call_name(func))
        module = self.tracker.current
        running = f" in {self.tracker.path(module)}" if module is not None else ""
        self.add(
            NonFiniteOpOutput.finding(
                f"{call_name(func)}{running} {what}",
                None if site is None else site.location(),
                Fix(fix),
                op=call_name(func),
                dtype=dtype,
            ),
            site,
        )

    def add(self, finding: Finding, site: Site | None, key: str = "") -> None:
        new = self.record.add_finding(finding, site, key)
        if new and self.options.strict and finding.severity >= Severity.ERROR:
            raise StrictFindingError(f"torchport --strict: {finding.code} {finding.message}")

    # --- factories ---------------------------------------------------------------------------
    def _checked_generator(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], target: torch.device | None
    ) -> None:
        """Raise as CUDA does for a generator of the other side: a host generator drawing for
        the simulated ``target``, or a device one drawing on the host (``target`` None)."""
        try:
            if target is None:
                simgenerator.check_host(kwargs["generator"])
            else:
                simgenerator.check(kwargs["generator"], target)
        except RuntimeError as exc:
            self.explain(exc, func, args, kwargs)
            raise

    def _factory(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        target = None
        if func in _FROM_DATA:
            args, kwargs = self._from_data(func, args, kwargs)
        # Pinned host memory needs a CUDA build: simulated, it is plain memory marked pinned.
        pin_host = self.sim is not None and bool(kwargs.get("pin_memory"))
        if pin_host:
            kwargs = {**kwargs, "pin_memory": False}
        if (
            self.sim is not None
            and self.sim.default_device is not None
            and kwargs.get("device") is None
            and func in _DEFAULT_DEVICE_TAKERS
        ):
            kwargs = {**kwargs, "device": self.sim.default_device}
        if self.sim is not None and kwargs.get("device") is not None:
            target = self.sim.resolve(kwargs["device"])
            if target is not None:
                if kwargs.get("generator") is not None:
                    self._checked_generator(func, args, kwargs, target)
                if pin_host and func is not torch.tensor:
                    # empty_cuda's check; torch.tensor pins its host staging copy instead.
                    raise simdevices.device_error("Only dense CPU tensors can be pinned")
                kwargs = {**kwargs, "device": "cpu"}
            else:
                args = simtensor.plain(args)
        elif self.sim is not None and kwargs.get("generator") is not None:
            self._checked_generator(func, args, kwargs, None)
        try:
            out = func(*args, **kwargs)
        except Exception as exc:
            self.explain(exc, func, args, kwargs)
            raise
        if target is not None and isinstance(out, torch.Tensor):
            out = simtensor.wrap_new(out, target)
        elif pin_host and self.sim is not None and isinstance(out, torch.Tensor):
            self.sim.pinned[out] = True
        if isinstance(out, torch.Tensor):
            # a draw from the program's own generator is not one to make on the device (TP104)
            seeded = "(generator=…)" if kwargs.get("generator") is not None else ""
            site = user_site(call_name(func) + seeded)
            if site is not None:
                self.provenance.record(out, site)
                if out.dtype == torch.float64:
                    self.record.float64_origins[site] += 1
            if func is torch.arange:
                halfrange.check_arange(self, out)
        return out

    def _from_data(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """torch.tensor's data as the simulated call needs it; device tensors in a list read.

        A GPU reads each device tensor of a list given as data on the host (a sync per call),
        where the simulated ones are read from their CPU data. ``new_tensor`` makes its tensor
        on its own tensor's device, which C++ takes from the options: the simulated device.
        """
        at = 1 if func is T.new_tensor else 0
        data = args[at] if len(args) > at else kwargs.get("data")
        if isinstance(data, (list, tuple)) and _first_leaf_on_device(data):
            self.on_sync(f"{call_name(func)}([device tensors])")
            syncs.tensor_from_device_scalars(self, call_name(func), data)
        if self.sim is None:
            return args, kwargs
        if at == 1 and isinstance(args[0], simtensor.SimTensor) and kwargs.get("device") is None:
            kwargs = {**kwargs, "device": args[0].device}
        if isinstance(data, (list, tuple)) or at == 1:
            args = simtensor.plain(args)
        return args, kwargs

    # --- syncs -------------------------------------------------------------------------------
    def _sync(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tensor = args[0] if args else None
        if isinstance(tensor, torch.Tensor):
            if self.has_pending:
                self._check_pending(args)
            if tensor.device.type != "cpu":
                self.on_sync(_SYNC_KINDS[func], tensor)
                if func in (T.numpy, T.__array__):
                    syncs.numpy_of_device_tensor(self, tensor)
            if isinstance(tensor, simtensor.SimTensor):
                if func in (T.numpy, T.__array__):
                    raise simdevices.device_error(
                        f"can't convert {tensor.device} device type tensor to numpy. Use "
                        "Tensor.cpu() to copy the tensor to host memory first.",
                        TypeError,
                    )
                if func is T.tolist:  # refused for subclasses; on a GPU it copies to the host
                    return tensor._inner.tolist()
                simtensor.EXPLICIT_READS.append(True)
                try:
                    return func(*args, **kwargs)
                finally:
                    simtensor.EXPLICIT_READS.pop()
        return func(*args, **kwargs)

    def on_sync(self, kind: str, tensor: torch.Tensor | None = None) -> None:
        """A host-device synchronization: count it at its site; earlier copies are now done."""
        try:
            site = user_site(kind)
            if site is not None:
                cause = library_cause(tensor, self.provenance)
                self.record.add_sync(site, kind, self.tracker.passes, cause)
        except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
            self.internal("recording a sync", internal)
        self.pending = WeakIdKeyDictionary()
        self.has_pending = False
        self.inflight.clear()

    def _check_pending(self, args: tuple[Any, ...]) -> None:
        for arg in args:
            if isinstance(arg, torch.Tensor) and arg in self.pending:
                made = self.pending[arg]
                site = user_site("read")
                where = ""
                if site is None and isinstance(made, Site):
                    # read by library code alone (torch.save on a writer thread): no line of
                    # the program reads it, so the copy's line is where to fix it
                    site, where = made, " (by library code)"
                self.add(
                    NonBlockingHostReadBeforeSync.finding(
                        f"the result of the non_blocking device-to-host copy made at {made} is "
                        f"read on the host{where} before any synchronization: on a GPU it may "
                        "still hold old data",
                        None if site is None else site.location(),
                        Fix(
                            "call torch.cuda.synchronize() (or record an event and wait on it) "
                            "before reading it, or copy without non_blocking=True"
                        ),
                        related=(made.location(),) if isinstance(made, Site) and not where else (),
                    ),
                    site,
                )
                del self.pending[arg]
                self.has_pending = len(self.pending) > 0

    # --- dtype promotion -----------------------------------------------------------------------
    def _promoting(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if len(args) >= 2:
            a, b = args[0], args[1]
            if (
                isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and a.dtype != b.dtype and {a.dtype, b.dtype} == _FLOATS
                and a.dim() > 0 and b.dim() > 0
            ):  # fmt: skip
                self._promotion(func, a if a.dtype == torch.float64 else b)
        return self._op(func, args, kwargs)

    def _joining(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        out = self._op(func, args, kwargs)
        parts = args[0] if args else kwargs.get("tensors")
        if isinstance(out, torch.Tensor):
            try:
                self._widened(func, parts, out)
            except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
                self.internal("following a widening join", internal)
        return out

    def _widened(self, func: Any, parts: Any, out: torch.Tensor) -> None:
        """The result of joining tensors of two float dtypes keeps the origin of the part
        that gave it its dtype (when the program made that part and the result has none)."""
        if not isinstance(parts, list | tuple) or not out.is_floating_point():
            return
        dtypes = {p.dtype for p in parts if isinstance(p, torch.Tensor)}
        if len(dtypes) < 2 or self.provenance.get(out) is not None:
            return
        for part in parts:
            if isinstance(part, torch.Tensor) and part.dtype == out.dtype:
                site = self.provenance.get(part)
                if site is not None:
                    through = f"{site.call}, then {call_name(func)} with {len(dtypes)} dtypes"
                    self.provenance.record(out, Site(site.path, site.line, through))
                    return

    def _promotion(self, func: Any, wide: torch.Tensor) -> None:
        site = user_site(call_name(func))
        origin = self.provenance.get(wide)
        made = f" (the float64 one was created at {origin} by {origin.call})" if origin else ""
        self.add(
            ImplicitFloat64Promotion.finding(
                f"{call_name(func)} combines float32 and float64 tensors, so the result is "
                f"float64{made}",
                None if site is None else site.location(),
                Fix(
                    "make the float64 tensor float32 where it is created (.float(), or "
                    "dtype=np.float32 on the NumPy side)"
                ),
                origin=None if origin is None else str(origin),
                related=(origin.location(),) if origin is not None else (),
            ),
            site,
        )


# Where the user's own call runs, for the simulation's check of host tensors (simhost).
simhost.HANDLERS.update(
    f.__code__
    for f in (Observer._op, Observer._factory, Observer._sync, transfers.TransferHandlers._run)
)


def _first_leaf_on_device(data: list[Any] | tuple[Any, ...]) -> bool:
    """Whether the first item of (nested) list data is a device tensor; lists are homogeneous."""
    first: Any = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    return isinstance(first, torch.Tensor) and first.device.type != "cpu"


def _passthrough(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return func(*args, **kwargs)


def _first_argument(args: tuple[Any, ...]) -> Any:
    """An op's first argument, or the first item of it when it is a list (``torch.cat``)."""
    first = args[0] if args else None
    if isinstance(first, (list, tuple)) and first:
        return first[0]
    return first
