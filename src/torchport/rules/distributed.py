"""Rules of one family; see registry.FAMILIES."""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register

__all__: list[str] = []


# --- static rules (analyze): TP400-TP449 -------------------------------------------------


@register
class DataParallelUsed(Rule):
    """## What it does
    Flags `nn.DataParallel(...)`.

    ## Why is this bad?
    DataParallel runs one process with one thread per GPU: it replicates the model at every
    step, is bottlenecked by the GIL and GPU 0, and is not recommended by PyTorch.
    DistributedDataParallel under `torchrun` is faster even on one machine.

    ## Example
    ```python
    model = nn.DataParallel(model)
    ```

    ## Use instead
    ```python
    model = DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])
    ```

    ## Fix safety
    No automatic fix; `torchport port` converts the script.

    ## References
    - [DataParallel](https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html)
    """

    code = "TP401"
    name = "data-parallel-used"
    severity = Severity.WARNING


@register
class DdpWithoutDeviceIds(Rule):
    """## What it does
    Flags `DistributedDataParallel(model)` without `device_ids` in a file that uses an
    accelerator and never calls `torch.cuda.set_device`.

    ## Why is this bad?
    Each process must be bound to its own GPU (its `LOCAL_RANK`); otherwise every process
    allocates on GPU 0 and collectives may hang or run out of memory.

    ## Example
    ```python
    model = DistributedDataParallel(model.cuda())
    ```

    ## Use instead
    ```python
    torch.cuda.set_device(local_rank)
    model = DistributedDataParallel(model.cuda(), device_ids=[local_rank])
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP402"
    name = "ddp-without-device-ids"
    severity = Severity.WARNING


@register
class SamplerWithoutSetEpoch(Rule):
    """## What it does
    Flags a `DistributedSampler` in a file that never calls `set_epoch`.

    ## Why is this bad?
    The shuffle order is seeded by the epoch: without `sampler.set_epoch(epoch)` every epoch
    sees the data in the same order.

    ## Example
    ```python
    sampler = DistributedSampler(dataset)
    for epoch in range(10):
        for x, y in DataLoader(dataset, sampler=sampler): ...
    ```

    ## Use instead
    ```python
    for epoch in range(10):
        sampler.set_epoch(epoch)
        ...
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP403"
    name = "sampler-without-set-epoch"
    severity = Severity.WARNING


@register
class ShuffleWithSampler(Rule):
    """## What it does
    Flags a `DataLoader` given both a `sampler` and `shuffle=True`.

    ## Why is this bad?
    They are mutually exclusive: the DataLoader raises "sampler option is mutually exclusive
    with shuffle". The sampler (a `DistributedSampler`) does the shuffling.

    ## Example
    ```python
    DataLoader(dataset, sampler=sampler, shuffle=True)
    ```

    ## Use instead
    ```python
    DataLoader(dataset, sampler=sampler)
    ```

    ## Fix safety
    Unsafe: removes `shuffle=True`.
    """

    code = "TP404"
    name = "shuffle-with-sampler"
    severity = Severity.ERROR


@register
class UnguardedCheckpointSave(Rule):
    """## What it does
    Flags `torch.save(...)` in a distributed script that is not guarded by a rank check.

    ## Why is this bad?
    Every process writes the same file at the same time: wasted I/O at best, a corrupted
    checkpoint at worst.

    ## Example
    ```python
    torch.save(model.state_dict(), "ckpt.pt")
    ```

    ## Use instead
    ```python
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "ckpt.pt")
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP405"
    name = "unguarded-checkpoint-save"
    severity = Severity.WARNING
