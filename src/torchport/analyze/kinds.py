"""What a name can hold, and the PyTorch/NumPy vocabulary that tells us (no torch import)."""

from __future__ import annotations

from dataclasses import dataclass

TENSOR, MODULE, LOADER, DEVICE, NDARRAY = "tensor", "module", "loader", "device", "ndarray"
OPTIMIZER, SCALER, RNG, DATASET, SAMPLER = "optimizer", "scaler", "rng", "dataset", "sampler"


@dataclass(frozen=True)
class Info:
    """What an expression evaluates to.

    ``device`` is ``"cpu"`` (made or left on the host), ``"accel"`` (moved to a device that may
    be an accelerator) or None (unknown). ``target`` is the source text of the device it was
    moved to, so messages and fixes can name it.
    """

    kind: str
    dtype: str | None = None
    device: str | None = None
    origin: str = ""
    cls: str | None = None
    target: str | None = None
    batch: bool = False


_ALIASES = {
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.utils.data.dataset.Dataset": "torch.utils.data.Dataset",
    "torch.utils.data.dataset.IterableDataset": "torch.utils.data.IterableDataset",
    "torch.nn.modules.module.Module": "torch.nn.Module",
    "torch.nn.parallel.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": (
        "torch.nn.parallel.DistributedDataParallel"
    ),
    "torch.nn.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "torch.nn.DataParallel",
    "torch.utils.data.distributed.DistributedSampler": "torch.utils.data.DistributedSampler",
    "np": "numpy",
}


def canonical(qualified: str) -> str:
    return _ALIASES.get(qualified, qualified)


MODULE_BASES = {"torch.nn.Module"}
DATASET_BASES = {"torch.utils.data.Dataset", "torch.utils.data.IterableDataset"}

# Factories that allocate a new tensor on the default (CPU) device unless given ``device=``.
FACTORIES = {
    f"torch.{n}"
    for n in [
        "zeros",
        "ones",
        "empty",
        "full",
        "rand",
        "randn",
        "randint",
        "randperm",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "tril_indices",
        "triu_indices",
        "hann_window",
        "hamming_window",
        "bartlett_window",
        "blackman_window",
        "kaiser_window",
        "tensor",
        "as_tensor",
        "normal",
        "bernoulli",
        "multinomial",
        # a module's helper that makes its tensor on the CPU unless given device=
        "nn.Transformer.generate_square_subsequent_mask",
    ]
}
INT_FACTORIES = {"torch.randint", "torch.randperm", "torch.tril_indices", "torch.triu_indices"}
# torch functions whose result is a tensor on the device of their tensor inputs.
TENSOR_OPS = {
    f"torch.{n}"
    for n in [
        "relu",
        "sigmoid",
        "tanh",
        "softmax",
        "log_softmax",
        "cat",
        "stack",
        "matmul",
        "mm",
        "bmm",
        "exp",
        "log",
        "abs",
        "sqrt",
        "where",
        "argmax",
        "argmin",
        "sum",
        "mean",
        "flatten",
        "clamp",
        "einsum",
        "zeros_like",
        "ones_like",
        "randn_like",
        "rand_like",
        "empty_like",
        "full_like",
        "maximum",
        "minimum",
        "sin",
        "cos",
        "transpose",
        "reshape",
        "squeeze",
        "unsqueeze",
        "cdist",
        "gather",
        "isnan",
        "isinf",
        "isfinite",
        "floor",
        "round",
        "bincount",
        "cumsum",
        "triu",
        "tril",
        "outer",
        "masked_select",
        "index_select",
        "logical_and",
        "logical_or",
        "logical_not",
    ]
}
DEVICE_MOVES = {"to", "cuda", "cpu"}
DTYPE_CASTS = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "bfloat16": "bfloat16",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "bool": "bool",
    "byte": "uint8",
}
MODULE_IN_PLACE = DEVICE_MOVES | set(DTYPE_CASTS) | {"train", "eval", "requires_grad_"}
# Tensor methods that return a tensor on the same device, with the same dtype.
TENSOR_METHODS = set(
    [
        "detach",
        "clone",
        "view",
        "reshape",
        "contiguous",
        "sum",
        "mean",
        "squeeze",
        "unsqueeze",
        "flatten",
        "permute",
        "transpose",
        "abs",
        "exp",
        "log",
        "sqrt",
        "clamp",
        "softmax",
        "log_softmax",
        "argmax",
        "sigmoid",
        "relu",
        "t",
        "expand",
        "repeat",
        "pin_memory",
        "requires_grad_",
        "max",
        "min",
        "norm",
        "pow",
        "any",
        "all",
        "isnan",
        "isinf",
        "masked_fill",
        "gather",
        "cumsum",
        "matmul",
        "mul",
        "add",
        "sub",
        "div",
        "neg",
        "square",
        "index_select",
        "floor",
        "round",
    ]
)
DTYPES = {
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "int64": "int64",
    "long": "int64",
    "int32": "int32",
    "int": "int32",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}
NUMPY_FLOAT64 = {
    f"numpy.{n}"
    for n in [
        "random.rand",
        "random.randn",
        "random.random",
        "random.random_sample",
        "random.uniform",
        "random.normal",
        "random.standard_normal",
        "linspace",
        "loadtxt",
        "genfromtxt",
        "zeros",
        "ones",
        "empty",
        "eye",
        "identity",
    ]
}
RNG_FLOAT64 = {"standard_normal", "normal", "random", "uniform", "exponential"}
# what a value nothing else describes holds, by the name it is held under (`train(model, ...)`);
# hot.py compares lowercased names, the flow guesses names as written: both spellings of netG
MODEL_NAMES = frozenset(
    {"model", "net", "network", "module", "encoder", "decoder", "generator", "discriminator",
     "critic", "actor", "policy", "classifier", "backbone", "netG", "netD", "netg", "netd",
     "teacher", "student"}
)  # fmt: skip
GRAD_SCALERS = {"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler"}
AUTOCASTS = {
    "torch.cuda.amp.autocast",
    "torch.cpu.amp.autocast",
    "torch.amp.autocast",
    "torch.autocast",
}
ANNOTATIONS = {
    "torch.Tensor": TENSOR,
    "torch.nn.Module": MODULE,
    "torch.utils.data.DataLoader": LOADER,
    "torch.device": DEVICE,
    "numpy.ndarray": NDARRAY,
    "torch.amp.GradScaler": SCALER,
    "torch.GradScaler": SCALER,
    "torch.cuda.amp.GradScaler": SCALER,
    "torch.optim.Optimizer": OPTIMIZER,
}


def from_annotation(qualified: str | None) -> Info | None:
    kind = ANNOTATIONS.get(qualified or "")
    return None if kind is None else Info(kind)


def dtype_name(qualified: str | None) -> str | None:
    """``float64`` for torch.float64 / numpy.double / "float64"; None if not a dtype."""
    if not qualified:
        return None
    for prefix in ("torch.", "numpy."):
        if qualified.startswith(prefix):
            return DTYPES.get(qualified[len(prefix) :])
    return DTYPES.get(qualified)


def is_float(dtype: str | None) -> bool:
    return dtype is not None and (dtype.startswith("float") or dtype == "bfloat16")


def is_int(dtype: str | None) -> bool:
    return dtype is not None and (dtype.startswith("int") or dtype == "uint8")
