"""Names of the torch API, by what the placement analysis needs to know about them."""

from __future__ import annotations

from typing import TypeVar

from torchport.analyze import kinds as K

A = TypeVar("A")


def _torch(*names: str) -> frozenset[str]:
    return frozenset(f"torch.{n}" for n in names)


# Make a new tensor on the default (CPU) device unless given device=.
FACTORIES = _torch(
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange",
    "linspace", "logspace", "eye", "tril_indices", "triu_indices", "empty_strided", "range",
    "scalar_tensor", "complex", "hann_window", "hamming_window", "bartlett_window",
    "blackman_window", "kaiser_window", "nn.Transformer.generate_square_subsequent_mask",
)  # fmt: skip
LIKE = _torch(
    "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
    "randint_like",
)  # fmt: skip
# Make a tensor from host data (a list, a NumPy array).
DATA = _torch(
    "tensor", "as_tensor", "asarray", "from_numpy", "Tensor", "FloatTensor", "DoubleTensor",
    "LongTensor", "IntTensor", "ByteTensor", "BoolTensor", "HalfTensor", "frombuffer",
    "ShortTensor", "CharTensor",
)  # fmt: skip
TYPED_DATA = {
    "torch.FloatTensor": "float32", "torch.DoubleTensor": "float64", "torch.LongTensor": "int64",
    "torch.IntTensor": "int32", "torch.ByteTensor": "uint8", "torch.BoolTensor": "bool",
    "torch.HalfTensor": "float16",
}  # fmt: skip
CONTEXTS = frozenset(
    {"torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.set_grad_enabled",
     "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
     "torch.autograd.set_detect_anomaly", "torch.autograd.detect_anomaly",
     "torch.autograd.profiler.profile", "torch.profiler.profile"}
)  # fmt: skip
HOST_NAMESPACES = (
    "torch.cuda.",
    "torch.backends.",
    "torch.mps.",
    "torch.xpu.",
    "torch.accelerator.",
)
HOST_RESULTS = frozenset(
    {"torch.save", "torch.is_tensor", "torch.numel", "torch.get_default_dtype",
     "torch.is_grad_enabled", "torch.Size", "torch.finfo", "torch.iinfo"}
)  # fmt: skip
NO_RESULT = ("torch.nn.init.", "torch.manual_seed", "torch.set_", "torch.use_deterministic")
# Return their (first) argument: placement is unchanged.
PASS_THROUGH = frozenset(
    {"torch.compile", "torch.jit.script", "torch.jit.trace", "copy.deepcopy", "copy.copy",
     "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "builtins.iter", "builtins.reversed",
     "torch.nn.utils.weight_norm", "torch.nn.utils.spectral_norm",
     "torch.nn.utils.parametrizations.weight_norm", "torch.nn.SyncBatchNorm.convert_sync_batchnorm"}
)  # fmt: skip
GRAD_SCALERS = frozenset(K.GRAD_SCALERS | {"torch.cpu.amp.GradScaler"})
# Wrappers that run a module where the module is.
WRAPPERS = frozenset(
    {"torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel",
     "torch.distributed.fsdp.FullyShardedDataParallel"}
)  # fmt: skip
NOT_MODULES = frozenset({"Parameter", "Module", "Buffer"})
RNN_HIDDEN = {"torch.nn.LSTM": 2, "torch.nn.GRU": 1, "torch.nn.RNN": 1}
PAIRS = frozenset({"torch.nn.MultiheadAttention"})
# Calls whose later arguments may stay on the host beside device inputs: CTC moves its targets
# to the log-probabilities' device itself and reads the lengths on the host (cuDNN wants them
# there). The names, in the order of the positional arguments after the first.
HOST_TOLERANT = {
    name: ("targets", "input_lengths", "target_lengths")
    for name in ("torch.nn.CTCLoss", "torch.nn.functional.ctc_loss", "torch.ctc_loss")
}


def device_operands(callee: str | None, args: list[A], keywords: list[tuple[str, A]]) -> list[A]:
    """The arguments of a call of ``callee`` that must be on the device with the others: all
    of them, less those it accepts on the host (HOST_TOLERANT)."""
    tolerant = HOST_TOLERANT.get(callee or "", ())
    kept = args[:1] + args[len(tolerant) + 1 :] if tolerant else args
    return [*kept, *(value for name, value in keywords if name not in tolerant)]


# torch functions over a list of tensors (the list's items meet).
OVER_LISTS = frozenset(
    {"cat", "stack", "hstack", "vstack", "dstack", "column_stack", "concat", "concatenate",
     "block_diag"}
)  # fmt: skip
# Libraries that read tensors as host data (through NumPy).
HOST_LIBRARIES = ("numpy.", "sklearn.", "scipy.", "matplotlib.", "pandas.", "seaborn.", "PIL.")
QUIET_LIBRARIES = ("argparse.", "logging.", "os.", "sys.", "json.", "pathlib.", "shutil.")
HOST_SCALARS = ("math.", "time.", "random.")

# -- tensor methods -----------------------------------------------------------------------------

TENSOR_TO_HOST = frozenset(
    {"item", "tolist", "size", "dim", "numel", "nelement", "element_size", "stride",
     "get_device", "data_ptr", "is_contiguous", "is_floating_point", "is_complex", "__len__",
     "storage_offset", "ndimension", "is_pinned", "untyped_storage", "register_hook",
     "retain_grad"}
)  # fmt: skip
SAME_PLACE = frozenset(
    {"new_tensor", "new_zeros", "new_ones", "new_empty", "new_full", "view_as", "expand_as",
     "reshape_as", "copy_", "set_", "resize_as_"}
)  # fmt: skip
NO_MEET = frozenset(
    {"copy_", "type_as", "view_as", "expand_as", "reshape_as", "to", "new_tensor", "fill_"}
)  # fmt: skip
# Methods whose last argument is a fill value: a 0-dim tensor from any device will do.
VALUE_LAST = frozenset({"masked_fill", "masked_fill_", "index_fill", "index_fill_"})
SEQ_RESULTS = frozenset({"split", "chunk", "unbind", "tensor_split", "split_with_sizes"})
REDUCTIONS = frozenset(
    {"sum", "mean", "max", "min", "std", "var", "norm", "prod", "all", "any", "count_nonzero",
     "median", "logsumexp", "amax", "amin", "nansum", "nanmean"}
)  # fmt: skip
# Methods that show a value of unknown kind is tensor-like (a batch we cannot see into...).
TENSORISH = frozenset(
    {"to", "cuda", "cpu", "float", "long", "half", "double", "int", "bool", "detach", "numpy",
     "item", "view", "reshape", "size", "unsqueeze", "squeeze", "permute", "contiguous",
     "clone", "pin_memory"}
)  # fmt: skip
