"""Kernels CUDA lacks for some dtypes: under ``--simulate cuda`` such an op fails as on a GPU.

The simulated device computes on the CPU, which has kernels CUDA does not: an integer matrix
product (``adj @ one_hot`` of two int64 tensors) runs on the CPU and stops on a GPU with
'"addmm_cuda" not implemented for 'Long''. The check is one set look-up per op.
"""

from __future__ import annotations

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
_NAMES = {
    torch.int64: "Long",
    torch.int32: "Int",
    torch.int16: "Short",
    torch.int8: "Char",
    torch.uint8: "Byte",
    torch.bool: "Bool",
}


def check(func: Any, args: tuple[Any, ...]) -> None:
    """Raise as CUDA does when a matrix product of simulated tensors is of an integer dtype."""
    first = args[0] if args else None
    if isinstance(first, torch.Tensor) and first.dtype in _NAMES:
        kernel = INTEGER_MATMULS[func]
        raise RuntimeError(
            f"\"{kernel}\" not implemented for '{_NAMES[first.dtype]}' (torchport --simulate: "
            "CUDA has no integer matrix product; compute it in a floating dtype)"
        )
