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
