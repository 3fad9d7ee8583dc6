"""Kernels CUDA lacks or refuses: under ``--simulate cuda`` such an op fails as on a GPU.

The simulated device computes on the CPU, which has kernels CUDA does not: an integer matrix
product (``adj @ one_hot`` of two int64 tensors), an average pooling of int64 labels or a
bilinear resize of uint8 frames runs on the CPU and stops on a GPU with '"addmm_cuda" not
implemented for 'Long''. Simulated CUDA autocast runs as CPU autocast, which allows
``binary_cross_entropy``; CUDA autocast refuses it. CUDA's QR takes no half precision, which
``torch.pca_lowrank`` meets under float16 autocast. The check is one set look-up per op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

_aten = torch.ops.aten
# aten op -> the kernel name CUDA reports (matmul, linear and einsum reach these)
INTEGER_MATMULS: dict[Any, str] = {
    _aten.mm.default: "addmm_cuda",
    _aten.addmm.default: "addmm_cuda",
    _aten.bmm.default: "bmm_cuda",
    _aten.baddbmm.default: "baddbmm_cuda",
    _aten.addbmm.default: "addbmm_cuda",
    _aten.mv.default: "addmv_impl_cuda",
    _aten.addmv.default: "addmv_impl_cuda",
    _aten.dot.default: "dot",
}
# Linear, bilinear, bicubic and trilinear resizing: CUDA's kernels take floating dtypes only
# (the CPU's also take uint8 images); nearest takes uint8 on both.
INTEGER_RESIZES: dict[Any, str] = {
    op: kernel
    for name, kernel in (
        ("upsample_linear1d", "upsample_linear1d_out_frame"),
        ("upsample_bilinear2d", "upsample_bilinear2d_out_frame"),
        ("_upsample_bilinear2d_aa", "upsample_bilinear2d_aa_out_frame"),
        ("upsample_bicubic2d", "upsample_bicubic2d_out_frame"),
        ("upsample_trilinear3d", "upsample_trilinear3d_out_frame"),
    )
    for op in (getattr(_aten, name).default, getattr(_aten, name).vec)
}
# Pooling: the CPU's kernels also take int64 (average pooling with `divisor_override`), CUDA's
# floating dtypes only (pytorch/pytorch#139115, and #107412 for 2-D max pooling)
INTEGER_POOLS: dict[Any, str] = {
    _aten.avg_pool2d.default: "avg_pool2d_out_cuda_frame",
    _aten.avg_pool3d.default: "avg_pool3d_out_cuda_frame",
    _aten.max_pool2d_with_indices.default: "max_pool2d_with_indices_out_cuda_frame",
}
# QR (which torch.pca_lowrank and svd_lowrank run on a matmul's output, float16 under
# autocast): CUDA's takes float32 and float64 only (pytorch/pytorch#99710)
HALF_DECOMPOSITIONS: dict[Any, str] = {
    _aten.linalg_qr.default: "geqrf_cuda",
    _aten.geqrf.default: "geqrf_cuda",
}
_HALF_NAMES = {torch.float16: "Half", torch.bfloat16: "BFloat16"}
# aten ops CUDA autocast refuses to run (a float16 sigmoid output's log saturates)
BANNED_UNDER_AUTOCAST = frozenset({_aten.binary_cross_entropy.default})
CHECKED = (
    frozenset(INTEGER_MATMULS)
    | frozenset(INTEGER_RESIZES)
    | frozenset(INTEGER_POOLS)
    | frozenset(HALF_DECOMPOSITIONS)
    | BANNED_UNDER_AUTOCAST
)
# Whether each simulated-device autocast region entered and not yet left is enabled, innermost
# last (simulate.py keeps it): inside the op, autocast's own TLS reads as off.
device_autocast: list[bool] = []
_NAMES = {
    torch.int64: "Long",
    torch.int32: "Int",
    torch.int16: "Short",
    torch.int8: "Char",
    torch.uint8: "Byte",
    torch.bool: "Bool",
}


def check(func: Any, args: tuple[Any, ...]) -> None:
    """Raise as CUDA does: an integer matrix product, or an op CUDA autocast refuses."""
    if func in BANNED_UNDER_AUTOCAST:
        if device_autocast and device_autocast[-1]:
            raise RuntimeError(
                "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
                "autocast (torchport --simulate: CUDA autocast refuses them; apply "
                "binary_cross_entropy_with_logits or BCEWithLogitsLoss to the logits instead)"
            )
        return
    first = args[0] if args else None
    if func in HALF_DECOMPOSITIONS:
        _check_half_input(first)
        return
    if not (isinstance(first, torch.Tensor) and first.dtype in _NAMES):
        return
    if func in INTEGER_RESIZES:
        kernel, what = INTEGER_RESIZES[func], "no integer linear, bilinear or bicubic resize"
    elif func in INTEGER_POOLS:
        kernel, what = INTEGER_POOLS[func], "no integer pooling"
    else:
        kernel, what = INTEGER_MATMULS[func], "no integer matrix product"
    raise RuntimeError(
        f"\"{kernel}\" not implemented for '{_NAMES[first.dtype]}' (torchport --simulate: "
        f"CUDA has {what}; compute it in a floating dtype)"
    )


# The same QR at the function level: simulated CUDA autocast runs as CPU autocast, which
# casts QR's input to float32 before the op sees it; CUDA autocast leaves it float16.
HALF_FUNCTIONS = frozenset({torch.linalg.qr, torch.geqrf})


def half_checked(handler: Callable[..., Any]) -> Callable[..., Any]:
    """``handler`` for QR on the simulated device, refusing half precision as CUDA does."""

    def checked(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        first = args[0] if args else kwargs.get("A", kwargs.get("input"))
        if isinstance(first, torch.Tensor) and first.device.type != "cpu":
            _check_half_input(first)
        return handler(func, args, kwargs)

    return checked


def _check_half_input(first: object) -> None:
    if isinstance(first, torch.Tensor) and first.dtype in _HALF_NAMES:
        raise RuntimeError(
            f"\"geqrf_cuda\" not implemented for '{_HALF_NAMES[first.dtype]}' (torchport "
            "--simulate: CUDA's QR takes float32 and float64 only; under autocast, run it "
            "with autocast disabled on a float32 copy)"
        )


# cuFFT computes in half precision (float16 input, or complex32) only when every transformed
# size is a power of two (pytorch/pytorch#74857); the CPU has no half FFT at all, and CPU
# autocast, which simulated CUDA autocast runs as, upcasts torch.stft where CUDA autocast
# leaves a float16 input as it is. Checked at the function level, where the sizes are known.
def _stft_sizes(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, ...]:
    n_fft = args[1] if len(args) > 1 else kwargs.get("n_fft")
    return (n_fft,) if isinstance(n_fft, int) else ()


def _sizes(dims: int, inverse_real: bool) -> Callable[..., tuple[int, ...]]:
    """The transformed sizes of ``torch.fft.<fn>(input, n or s, dim)``: ``n``/``s`` when
    given, else the input's sizes along ``dim`` (its last ``dims`` ones, or all for 0); a real
    inverse transform's default output size is ``2 * (m - 1)``."""

    def sizes(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, ...]:
        given = args[1] if len(args) > 1 else kwargs.get("n" if dims == 1 else "s")
        if isinstance(given, int):
            return (given,)
        if isinstance(given, (list, tuple)) and all(isinstance(v, int) for v in given):
            return tuple(given)
        tensor = args[0] if args else kwargs.get("input")
        if not isinstance(tensor, torch.Tensor) or tensor.dim() == 0:
            return ()
        dim = args[2] if len(args) > 2 else kwargs.get("dim", -1 if dims == 1 else None)
        if isinstance(dim, int):
            chosen = [dim]
        elif isinstance(dim, (list, tuple)):
            chosen = list(dim)
        else:
            chosen = list(range(-min(dims, tensor.dim()), 0)) if dims else list(range(tensor.dim()))
        found = [tensor.shape[d] for d in chosen]
        if inverse_real and found:
            found[-1] = 2 * (found[-1] - 1)
        return tuple(found)

    return sizes


FFT_FUNCTIONS: dict[Any, Callable[[tuple[Any, ...], dict[str, Any]], tuple[int, ...]]] = {
    torch.stft: _stft_sizes,
    **{getattr(torch.fft, n): _sizes(1, n == "irfft") for n in ("fft", "ifft", "rfft", "irfft")},
    **{
        getattr(torch.fft, n): _sizes(2, n == "irfft2")
        for n in ("fft2", "ifft2", "rfft2", "irfft2")
    },
    **{
        getattr(torch.fft, n): _sizes(0, n == "irfftn")
        for n in ("fftn", "ifftn", "rfftn", "irfftn")
    },
}
_HALF_FFT = (torch.float16, torch.complex32)


def fft_checked(handler: Callable[..., Any]) -> Callable[..., Any]:
    """``handler`` for an FFT on the simulated device, refusing a half-precision one of a size
    that is not a power of two, as cuFFT does."""

    def checked(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        first = args[0] if args else kwargs.get("input")
        if (
            isinstance(first, torch.Tensor)
            and first.device.type != "cpu"
            and first.dtype in _HALF_FFT
        ):
            sizes = list(FFT_FUNCTIONS[func](args, kwargs))
            if any(size < 1 or size & (size - 1) for size in sizes):
                raise RuntimeError(
                    "cuFFT only supports dimensions whose sizes are powers of two when "
                    f"computing in half precision, but got a signal size of{sizes} (torchport "
                    "--simulate: as on a GPU; compute the transform in float32, e.g. on "
                    "x.float() with autocast disabled)"
                )
        return handler(func, args, kwargs)

    return checked


# CUDA autocast's float32 list against CPU autocast's, which simulated CUDA autocast runs as:
# ops that CUDA autocast runs in float32 (their float16/bfloat16 inputs cast up) and CPU autocast
# leaves in the input's precision (torch 2.x's autocast_mode lists), checked at the function
# level: a softmax or a layer norm of a half input comes out float32 on the GPU.
def _present(owner: Any, names: str) -> frozenset[Any]:
    return frozenset(getattr(owner, n) for n in names.split() if hasattr(owner, n))


_UNARY = "exp log log10 log2 log1p expm1 acos asin cosh sinh tan reciprocal rsqrt erfinv"
_REDUCING = "pow softmax log_softmax cumsum cumprod sum logsumexp norm renorm dist"
CUDA_FLOAT32 = (
    _present(torch, f"{_UNARY} {_REDUCING} layer_norm group_norm cosine_similarity")
    | _present(torch.Tensor, f"{_UNARY} {_REDUCING} __pow__ __rpow__ __rtruediv__")
    | _present(
        torch.nn.functional,
        "softmax softmin log_softmax layer_norm group_norm softplus cosine_similarity normalize",
    )
    | _present(torch.linalg, "vector_norm matrix_norm norm")
)
# ...and ops that CPU autocast runs in float32 while CUDA autocast leaves them alone (reflect
# and replicate padding, 3-D max and adaptive pooling): on the GPU a float16 input stays float16.
CPU_FLOAT32_ONLY = _present(
    torch.nn.functional, "pad max_pool3d adaptive_avg_pool3d adaptive_max_pool3d"
)
_HALF = (torch.float16, torch.bfloat16)


def cuda_autocast_float32(handler: Callable[..., Any]) -> Callable[..., Any]:
    """``handler`` for an op CUDA autocast runs in float32: in an enabled simulated autocast
    region, its half-precision inputs on the device are cast up first (not with ``dtype=``,
    which autocast leaves alone)."""

    def checked(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if device_autocast and device_autocast[-1] and kwargs.get("dtype") is None:
            args = tuple(_up(a) for a in args)
        return handler(func, args, kwargs)

    return checked


def _up(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype in _HALF and value.device.type != "cpu":
        return value.float()
    return value


def cuda_autocast_as_is(handler: Callable[..., Any]) -> Callable[..., Any]:
    """``handler`` for an op CPU autocast casts up and CUDA autocast does not: in an enabled
    simulated autocast region it runs with the CPU's autocast off, keeping its input's dtype."""

    def checked(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if device_autocast and device_autocast[-1]:
            with torch.autocast("cpu", enabled=False):
                return handler(func, args, kwargs)
        return handler(func, args, kwargs)

    return checked
