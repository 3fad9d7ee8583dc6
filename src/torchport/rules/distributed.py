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
    Flags a shuffling `DistributedSampler` whose `set_epoch` is never called (on it, or on the
    `sampler` of a DataLoader built from it).

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


@register
class CollectiveOnCpuTensorWithNccl(Rule):
    """## What it does
    Flags a collective (`all_reduce`, `all_gather`, `broadcast`, `reduce`, ...) on a tensor made
    on the CPU, in a file whose process group may use the NCCL backend.

    ## Why is this bad?
    NCCL only moves GPU tensors: the collective fails ("Tensors must be CUDA") on the GPU
    cluster, although the same script works with gloo on a laptop.

    ## Example
    ```python
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    stats = torch.tensor([correct, total])
    dist.all_reduce(stats)
    ```

    ## Use instead
    ```python
    stats = torch.tensor([correct, total], device=device)
    dist.all_reduce(stats)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP406"
    name = "collective-on-cpu-tensor-with-nccl"
    severity = Severity.ERROR


@register
class DistributedSamplerUnused(Rule):
    """## What it does
    Flags a `DistributedSampler` that is never given to a DataLoader (no `sampler=` refers to it).

    ## Why is this bad?
    The DataLoader then iterates the whole dataset on every process: each rank trains on the
    same data and an epoch does N times the work.

    ## Example
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP407"
    name = "distributed-sampler-unused"
    severity = Severity.ERROR
