"""Multi-GPU code on simulated GPUs: DataParallel's collectives and DDP's process group.

The collectives of ``nn.DataParallel`` (``torch.nn.parallel.comm``) are C++ CUDA kernels; here
each is a few host copies between the simulated devices, so DataParallel code (scatter,
replicate, parallel_apply, gather) runs on ``cuda:N`` and a cross-device mistake inside it still
raises the real error. DDP's NCCL backend needs a CUDA build: its process groups run on gloo,
which the simulated tensors (CPU data to C++) satisfy.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from torchport.runtime.simdevices import device_error
from torchport.runtime.simtensor import SimTensor, plain, to_simulated

if TYPE_CHECKING:
    from torchport.runtime.simulate import Simulation

F = TypeVar("F", bound=Callable[..., Any])


class _DeviceContext:
    """``torch.cuda.device(i)``: makes ``i`` the current simulated device for the block."""

    def __init__(self, simulation: Simulation, device: Any) -> None:
        self._simulation = simulation
        target = simulation.resolve(device) if device is not None else None
        self._index = simulation.current if target is None else (target.index or 0)
        self._previous = simulation.current

    def __enter__(self) -> _DeviceContext:
        self._previous, self._simulation.current = self._simulation.current, self._index
        return self

    def __exit__(self, *exc: object) -> None:
        self._simulation.current = self._previous


def _device_class(simulation: Simulation) -> type[_DeviceContext]:
    """``torch.cuda.device`` as a class: torch's own code asks ``isinstance(d, torch.cuda.device)``
    (``_get_device_index``, under ``reset_peak_memory_stats`` and others)."""

    class device(_DeviceContext):
        def __init__(self, device: Any) -> None:
            super().__init__(simulation, device)

    return device


def process_group_patches(simulation: Simulation) -> list[tuple[Any, str, Any]]:
    """(owner, name, stand-in) for torch.distributed's process group creation: NCCL → gloo."""
    import torch.distributed as dist

    if not dist.is_available():
        return []

    def on_gloo(create: Any) -> Any:
        @functools.wraps(create)
        def created(*args: Any, **kwargs: Any) -> Any:
            if args and "backend" not in kwargs and create is original_init:
                kwargs["backend"], args = args[0], args[1:]
            backend = kwargs.get("backend")
            named = str(backend).lower()
            # torch >= 2.6 gives an unnamed backend the accelerator's (NCCL on a GPU machine)
            nccl = (backend is None and create is original_init) or "nccl" in named
            if nccl:
                from torchport.runtime.simulate import say_once

                say_once("NCCL (the process group runs on gloo)")
                kwargs["backend"] = "gloo"
            device_id = kwargs.get("device_id")
            if device_id is not None and simulation.resolve(device_id) is not None:
                kwargs["device_id"] = None  # gloo binds no CUDA device
            group = create(*args, **kwargs)
            # "cpu:gloo,cuda:nccl" and gloo take host tensors; a group made without a backend
            # has the default group's
            if create is original_init:
                simulation.nccl = nccl and "gloo" not in named
            elif "gloo" in named or (backend is None and not simulation.nccl):
                simulation.host_groups.append(group)
            return group

        return created

    original_init = dist.init_process_group
    return [
        (dist, "init_process_group", on_gloo(original_init)),
        (dist, "new_group", on_gloo(dist.new_group)),
        (dist, "get_backend", _backend_as_asked(simulation, dist.get_backend)),
        *((dist, name, _device_only(simulation, getattr(dist, name))) for name in _COLLECTIVES),
    ]


def _backend_as_asked(simulation: Simulation, get_backend: F) -> F:
    """``dist.get_backend()`` answering "nccl" to the program that asked for NCCL, so that it
    takes its GPU branch (``device = cuda if backend == "nccl" else cpu``); torch's own code,
    which drives the gloo group underneath, is told the truth."""

    @functools.wraps(get_backend)
    def backend(*args: Any, **kwargs: Any) -> Any:
        found = get_backend(*args, **kwargs)
        caller = sys._getframe(1).f_globals.get("__name__", "")
        group = kwargs.get("group", args[0] if args else None)
        on_default = group is None or group is _world_group()
        if simulation.nccl and on_default and not caller.startswith("torch."):
            return "nccl"
        return found

    return backend  # type: ignore[return-value]


def _world_group() -> Any:
    import torch.distributed as dist

    return dist.GroupMember.WORLD


# The collectives NCCL runs only on CUDA tensors (gloo, standing in for it, takes host ones).
_COLLECTIVES = (
    "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "reduce_scatter_tensor", "all_to_all_single",
)  # fmt: skip


def _device_only(simulation: Simulation, collective: F) -> F:
    """``collective`` failing as NCCL does for a host tensor, once the program asked for NCCL
    (a metric made with ``torch.tensor(auc)`` and all-reduced: fine on gloo, not on a GPU)."""

    @functools.wraps(collective)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if simulation.nccl and not _on_host_group(simulation, args, kwargs):
            for tensor in _tensors(args, kwargs):
                if type(tensor) is torch.Tensor:  # not a SimTensor: on the host
                    raise _host_tensor(simulation, collective.__name__, tensor)
        if any(isinstance(t, SimTensor) for t in _tensors(args, kwargs)):
            # gloo gets the host data the simulated tensors hold: its worker thread cannot call
            # back into Python (torch 2.11's all_gather fails an internal assert on a wrapper),
            # and a collective is one C++ call on a GPU, which no function mode sees
            with torch._C.DisableTorchFunction():
                return collective(*plain(args), **{k: plain(v) for k, v in kwargs.items()})
        return collective(*args, **kwargs)

    return checked  # type: ignore[return-value]


def _on_host_group(simulation: Simulation, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the collective is given a group that runs on gloo (``group=`` or positional)."""
    given = [kwargs.get("group"), *args]
    return any(value is group for value in given for group in simulation.host_groups)


def _tensors(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    values = [*args, *kwargs.values()]
    flat = [v for value in values for v in (value if isinstance(value, list) else [value])]
    return [v for v in flat if isinstance(v, torch.Tensor)]


def _host_tensor(simulation: Simulation, name: str, tensor: torch.Tensor) -> Exception:
    error = device_error(
        f"No backend type associated with device type cpu: NCCL's {name} takes only tensors "
        f"on the GPU, and this one (shape {tuple(tensor.shape)}) is on the CPU"
    )
    made = simulation.made_at(tensor)
    error._torchport_related = () if made is None else (made,)  # type: ignore[attr-defined]
    return error


def _kernel(function: F) -> F:
    """A stand-in for a C++ kernel of torch's, which no function mode sees on a GPU: its own
    torch calls are not the program's (they are neither counted nor reported)."""

    @functools.wraps(function)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        with torch._C.DisableTorchFunction():
            return function(*args, **kwargs)

    return kernel  # type: ignore[return-value]


def comm_patches(simulation: Simulation) -> list[tuple[Any, str, Any]]:
    """(owner, name, stand-in) for torch.nn.parallel.comm and torch.cuda.device."""
    from torch.nn.parallel import comm
    from torch.nn.parallel._functions import Scatter

    def device_of(device: Any) -> torch.device:
        if isinstance(device, int) and device < 0:
            return torch.device("cpu")
        return simulation.resolve(device) or simulation.default

    def place(tensor: torch.Tensor, device: Any) -> torch.Tensor:
        target = device_of(device)
        if target.type == "cpu":
            host: torch.Tensor = plain(tensor).clone()
            return host
        return to_simulated(tensor, target)

    @_kernel
    def scatter(
        tensor: torch.Tensor, devices: Sequence[Any] | None = None,
        chunk_sizes: Sequence[int] | None = None, dim: int = 0, streams: Any = None, **_: Any,
    ) -> tuple[torch.Tensor, ...]:  # fmt: skip
        targets = list(devices or range(simulation.count))
        sizes = list(chunk_sizes) if chunk_sizes else None
        parts = torch.split(tensor, sizes, dim) if sizes else tensor.chunk(len(targets), dim)
        return tuple(place(p.contiguous(), d) for p, d in zip(parts, targets, strict=False))

    @_kernel
    def gather(
        tensors: Sequence[torch.Tensor], dim: int = 0, destination: Any = None, **_: Any
    ) -> torch.Tensor:
        host = torch.cat([plain(t) for t in tensors], dim)
        return place(host, destination)

    @_kernel
    def broadcast_coalesced(
        tensors: Sequence[torch.Tensor], devices: Sequence[Any], buffer_size: int = 0
    ) -> list[list[torch.Tensor]]:
        return [[place(t, d) for t in tensors] for d in devices]

    @_kernel
    def reduce_add(inputs: Sequence[torch.Tensor], destination: Any = None) -> torch.Tensor:
        total = plain(inputs[0]).clone()
        for other in inputs[1:]:
            total += plain(other)
        return place(total, destination)

    @_kernel
    def reduce_add_coalesced(
        inputs: Sequence[Sequence[torch.Tensor]], destination: Any = None, buffer_size: int = 0
    ) -> list[torch.Tensor]:
        return [reduce_add(list(group), destination) for group in zip(*inputs, strict=True)]

    def scatter_forward(
        ctx: Any, target_gpus: Sequence[Any], chunk_sizes: Any, dim: int, input: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        # DataParallel's Scatter.forward, less its background copy streams: torch makes those
        # with torch.device(int), which C++ refuses without a real accelerator.
        ctx.dim = dim
        ctx.input_device = input.get_device() if input.device.type != "cpu" else -1
        outputs = scatter(input, [device_of(d) for d in target_gpus], chunk_sizes, dim)
        if input.is_complex():
            outputs = tuple(torch.view_as_complex(o) for o in outputs)
        return outputs

    return [
        (Scatter, "forward", staticmethod(scatter_forward)),
        (comm, "scatter", scatter),
        (comm, "gather", gather),
        (comm, "broadcast_coalesced", broadcast_coalesced),
        (comm, "reduce_add", reduce_add),
        (comm, "reduce_add_coalesced", reduce_add_coalesced),
        (torch.cuda, "device", _device_class(simulation)),
        *(
            [(torch.accelerator, "device_index", lambda d: _DeviceContext(simulation, d))]
            if hasattr(torch, "accelerator") and hasattr(torch.accelerator, "device_index")
            else []
        ),
    ]
