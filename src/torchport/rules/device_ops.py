"""Rules of one family; see registry.FAMILIES. Device placement of layers and op arguments."""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register

__all__: list[str] = []


# --- static rules (analyze): TP115-TP149 -------------------------------------------------


@register
class LayerCreatedInForward(Rule):
    """## What it does
    Flags a layer with weights (`nn.Linear`, `nn.Conv2d`, `nn.LayerNorm`, ...) constructed
    inside a module's `forward` (or a helper it calls).

    ## Why is this bad?
    The layer is created at every call, on the CPU, with fresh random weights: on a GPU the
    forward pass fails with a device mismatch, and anywhere its weights are never trained
    (the optimizer never saw them).

    ## Example
    ```python
    def forward(self, x):
        return nn.Linear(64, 10)(x)
    ```

    ## Use instead
    ```python
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(x)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP115"
    name = "layer-created-in-forward"
    severity = Severity.ERROR


@register
class PackedLengthsOnDevice(Rule):
    """## What it does
    Flags `pack_padded_sequence(x, lengths)` where `lengths` was moved to an accelerator.

    ## Why is this bad?
    The lengths must be a CPU int64 tensor (or a list): on a GPU the call stops with
    "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor".

    ## Example
    ```python
    padded, lengths = padded.to(device), lengths.to(device)
    packed = pack_padded_sequence(padded, lengths, batch_first=True)
    ```

    ## Use instead
    ```python
    packed = pack_padded_sequence(padded, lengths.cpu(), batch_first=True)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [pytorch/pytorch#43227](https://github.com/pytorch/pytorch/issues/43227)
    """

    code = "TP116"
    name = "packed-lengths-on-device"
    severity = Severity.ERROR


@register
class DeviceCacheKeyedWithoutDevice(Rule):
    """## What it does
    Flags a module that caches tensors in plain attributes (not buffers) from a method other
    than `__init__`, and rebuilds them only when something else changes: a shape, a batch
    size, or not at all once set (`if self.cache is not None: return`).

    ## Why is this bad?
    The cache is built on the device of the first call. After a first call on the CPU (a dry
    run, an export, a checkpoint saved with the cache) the module is moved with `.to(device)`,
    which does not move plain attributes, and the check still finds the cache valid: the CPU
    tensor meets the device inputs ("Expected all tensors to be on the same device").

    ## Example
    ```python
    if self.grid[i].shape[2:4] != x.shape[2:4]:
        self.grid[i] = self._make_grid(nx, ny)
    ```

    ## Use instead
    ```python
    if self.grid[i].shape[2:4] != x.shape[2:4] or self.grid[i].device != x.device:
        self.grid[i] = self._make_grid(nx, ny)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP121"
    name = "device-cache-keyed-without-device"
    severity = Severity.WARNING


# --- runtime rules (run): TP152 ----------------------------------------------------------


@register
class FailsOnTheDevice(Rule):
    """## What it does
    Under `run` on a GPU or `run --simulate`, reports the line where torch raised an error
    about devices, dtypes or mixed precision that no more specific rule explains: the line
    where the program stops on a GPU.

    ## Why is this bad?
    A program that runs on the CPU and raises here on the device has a porting mistake on this
    line or in a value that reaches it: a `torch.device` where torch wants a device type
    string, a kernel that does not exist for a dtype on the GPU, a scaler used in an order it
    refuses. The error message says which.

    ## Example
    ```python
    with torch.autocast(device, dtype=torch.float16):  # device is a torch.device
        loss = model(x)
    ```

    ## Use instead
    ```python
    with torch.autocast(device.type, dtype=torch.float16):
        loss = model(x)
    ```

    ## Fix safety
    No automatic fix. Only errors raised inside torch whose message names a device, a dtype
    or mixed precision are reported; any other failure is only stated in the run's verdict,
    since it may fail on the CPU as well.
    """

    code = "TP152"
    name = "fails-on-the-device"
    severity = Severity.ERROR
