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

    The program is correct as it is (DataParallel still works, and with one GPU it does
    nothing): this is advice, reported at info level, so it does not fail a CI gate.

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
    severity = Severity.INFO


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
    `sampler` of a DataLoader built from it); also a call of a helper that sets the epoch
    from a parameter with a default (`def get_sampler(self, epoch=0)`) which leaves that
    parameter out, from a function that has the epoch at hand.

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
    Flags `torch.save(...)` in a distributed script that is not guarded by a rank check: in the
    function that starts the process group (or wraps the model in DDP), or in a function or
    method of the same file that it calls outside a rank check (a checkpoint callback). A save
    to a temporary file of the process's own (`tempfile.NamedTemporaryFile`) is not flagged.
    A save guarded by the local rank (`if args.local_rank == 0:`) is reported as info: the
    first process of every node saves.

    ## Why is this bad?
    Every process writes the same file at the same time: wasted I/O at best, a corrupted
    checkpoint at worst. With a local-rank guard, that happens once several nodes share a
    filesystem.

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


@register
class StripRemovesCharacters(Rule):
    """## What it does
    Flags `.lstrip(...)`, `.rstrip(...)` and `.strip(...)` given a string that looks like a
    prefix or a suffix (`"module."`, `"_orig_mod."`, `".pt"`), in a file that imports torch.

    ## Why is this bad?
    The argument is a set of characters, not a prefix: every leading (or trailing) character
    found in it is removed. `"embed.weight".lstrip("module.")` is `"bed.weight"`, so a
    checkpoint saved from a `DataParallel`, DDP or `torch.compile` model loads with missing
    and unexpected keys, or, with `strict=False`, silently keeps random weights.

    ## Example
    ```python
    state = {k.lstrip("module."): v for k, v in state.items()}
    ```

    ## Use instead
    ```python
    state = {k.removeprefix("module."): v for k, v in state.items()}
    ```

    ## Fix safety
    Safe for `lstrip`/`rstrip` with a literal argument: the call becomes `removeprefix` /
    `removesuffix`, which removes exactly what the code meant to remove. These methods need
    Python 3.9, which every PyTorch release since 2.5 requires; on an older interpreter use
    slicing (`k[len("module."):] if k.startswith("module.") else k`). Unsafe when the argument
    is a variable or the call is `strip` (which also removes characters at the other end).

    ## References
    - [PEP 616: removeprefix and removesuffix](https://peps.python.org/616)
    - [nanochat: lstrip("_orig_mod.") also strips the "o" of "output_projection"](https://github.com/karpathy/nanochat/pull/234)
    """

    code = "TP408"
    name = "strip-removes-characters"
    severity = Severity.ERROR


@register
class GlobalRankAsDevice(Rule):
    """## What it does
    Flags a CUDA device index taken from the global rank (`dist.get_rank()`,
    `int(os.environ["RANK"])`, the rank an `mp.spawn` worker computes over the nodes,
    `node_rank * gpus_per_node + gpu`, or a variable holding one of them):
    `torch.device(f"cuda:{rank}")`, `torch.device("cuda", rank)`,
    `torch.cuda.set_device(rank)`, `.to(rank)`, `.cuda(rank)`,
    `DistributedDataParallel(..., device_ids=[rank])`.

    ## Why is this bad?
    The global rank counts processes over all nodes; a node only has its own GPUs, numbered
    from 0. On one machine both numbers agree, so the script works, but on the second node
    rank 8 asks for GPU 8 of an 8-GPU machine and fails with "invalid device ordinal". The
    process's GPU is its `LOCAL_RANK`.

    ## Example
    ```python
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    model = DistributedDataParallel(model.to(rank), device_ids=[rank])
    ```

    ## Use instead
    ```python
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torchrun: environment variables](https://docs.pytorch.org/docs/stable/elastic/run.html)
    - [llama-recipes: multi-node "invalid device ordinal"](https://github.com/meta-llama/llama-recipes/issues/90)
    """

    code = "TP409"
    name = "global-rank-as-device"
    severity = Severity.ERROR


@register
class WrappedStateDictSaved(Rule):
    """## What it does
    Flags `torch.save(model.state_dict(), ...)` (or a checkpoint dict holding it) where `model`
    was wrapped in `nn.DataParallel` or `DistributedDataParallel`.

    ## Why is this bad?
    The wrapper holds the network as its `module` attribute, so every key of its state dict
    starts with `module.`: the checkpoint no longer loads into the bare model (for inference,
    export, or a single-GPU run) without renaming every key. Where the wrapper is only made
    on multi-GPU machines, checkpoints from those machines differ from all the others.

    ## Example
    ```python
    model = nn.DataParallel(model)
    ...
    torch.save(model.state_dict(), "model.pt")
    ```

    ## Use instead
    ```python
    torch.save(model.module.state_dict(), "model.pt")
    ```

    ## Fix safety
    No automatic fix: where the wrapper is made under a condition, `model.module` does not
    always exist (unwrap with `getattr(model, "module", model)`).

    ## References
    - [torch.save() and nn.DataParallel()](https://github.com/pytorch/pytorch/issues/9176)
    - [Unexpected "module." keys in state_dict](https://github.com/pytorch/pytorch/issues/3805)
    """

    code = "TP410"
    name = "wrapped-state-dict-saved"
    severity = Severity.WARNING


@register
class WrappedBeforeMoved(Rule):
    """## What it does
    Flags `DistributedDataParallel(model, device_ids=[...])` when the model is moved to the
    device only after it is wrapped (`model = DDP(model, ...)`, then `model.to(device)`). At
    run time, it reports the error a wrapper raises over a module that is not on its GPU: DDP
    with `device_ids`, and DataParallel over several GPUs with a module never moved.

    ## Why is this bad?
    DDP reads where the module is when it is made: with `device_ids` it refuses a CPU module
    ("device_ids and output_device arguments only work with single-device/multiple-device GPU
    modules"). On the CPU no device ids are given and the program runs. (DataParallel checks
    at the first forward pass, so moving the wrapper after wrapping is fine there.)

    ## Example
    ```python
    model = DistributedDataParallel(Net(), device_ids=[local_rank])
    model = model.to(device)
    ```

    ## Use instead
    ```python
    model = DistributedDataParallel(Net().to(device), device_ids=[local_rank])
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP411"
    name = "wrapped-before-moved"
    severity = Severity.ERROR


@register
class NcclGroupWithoutDevice(Rule):
    """## What it does
    Flags `dist.init_process_group` with the NCCL backend (`"nccl"`, or a choice that can be
    `"nccl"`) in a file that never tells the process which GPU is its own: no
    `torch.cuda.set_device(local_rank)`, no `device_id=` for the group, no
    `CUDA_VISIBLE_DEVICES` set per process. Where the file does call `set_device`, flags a
    tensor made on (or moved to) the index-less `"cuda"` after the group starts and before
    that call in the same function: it lands on GPU 0 in every process.

    ## Why is this bad?
    The current CUDA device of every process stays GPU 0. NCCL's communicators, `barrier()`,
    and every `torch.cuda` call without an index (`memory_allocated()`, `empty_cache()`,
    `.cuda()`) then use GPU 0 from all processes: GPU 0 holds one CUDA context per process and
    runs out of memory first, and a barrier can hang when ranks disagree about their device.
    One GPU hides it.

    ## Example
    ```python
    def worker(rank, world_size):
        dist.init_process_group("nccl", rank=rank, world_size=world_size)
        model = DDP(Net().to(rank), device_ids=[rank])
    ```

    ## Use instead
    ```python
    def worker(rank, world_size):
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", rank=rank, world_size=world_size)
        model = DDP(Net().to(rank), device_ids=[rank])
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [torch.distributed: "ensure that each rank has an individual GPU, via torch.cuda.set_device"](https://pytorch.org/docs/stable/distributed.html)
    """

    code = "TP412"
    name = "nccl-group-without-device"
    severity = Severity.WARNING


@register
class AccumulationWithoutNoSync(Rule):
    """## What it does
    Flags `loss.backward()` at every micro-batch of a gradient accumulation
    (`optimizer.step()` only every N batches, or an inner loop over micro-batches and one step
    after it) in a file that wraps the model in `DistributedDataParallel` and never uses
    `model.no_sync()` (or sets `require_backward_grad_sync`, which `no_sync()` sets).

    ## Why is this bad?
    DDP all-reduces the gradients at every backward. With accumulation only the last
    micro-batch's reduction is needed: the others move the whole gradient over the network for
    nothing, so N-step accumulation pays N all-reduces per optimizer step.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        (loss_fn(ddp_model(x), y) / accum).backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    for step, (x, y) in enumerate(loader):
        last = (step + 1) % accum == 0
        with contextlib.nullcontext() if last else ddp_model.no_sync():
            (loss_fn(ddp_model(x), y) / accum).backward()
        if last:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP413"
    name = "accumulation-without-no-sync"
    severity = Severity.WARNING


@register
class ShardMetricNotReduced(Rule):
    """## What it does
    Flags an evaluation function of a distributed job (DDP, or a process group alone) that
    counts over a loader split across the processes (a `DistributedSampler`, or a subset by
    rank; also handed down through a parameter) and returns a ratio of its counts
    (`correct / total`, or a name holding it) without a collective (`dist.all_reduce`,
    `all_gather`) in between.

    ## Why is this bad?
    Each process sees 1/N of the validation set: the accuracy it returns is its shard's. Rank
    0 then logs it, keeps the "best" checkpoint by it, or stops early on it, each rank
    deciding on different numbers. One GPU hides it: the shard is the whole set.

    ## Example
    ```python
    def validate(model, loader):  # loader has a DistributedSampler
        correct = total = 0
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum()
            total += y.numel()
        return correct / total
    ```

    ## Use instead
    ```python
        counts = torch.tensor([correct, total], device=device, dtype=torch.float64)
        dist.all_reduce(counts)
        return counts[0] / counts[1]
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP414"
    name = "shard-metric-not-reduced"
    severity = Severity.WARNING


@register
class SyncBatchNormAfterWrapping(Rule):
    """## What it does
    Flags `nn.SyncBatchNorm.convert_sync_batchnorm(model)` applied to a model already wrapped
    in `DistributedDataParallel`.

    ## Why is this bad?
    DDP registered its hooks and buckets on the parameters of the BatchNorm layers it was
    given; the conversion builds new layers, so the wrapper goes on synchronizing modules the
    model no longer uses (or fails on the new ones), and the statistics are still per process.
    Convert first, then wrap.

    ## Example
    ```python
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    ```

    ## Use instead
    ```python
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model).to(local_rank)
    model = DDP(model, device_ids=[local_rank])
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP415"
    name = "sync-batchnorm-after-wrapping"
    severity = Severity.WARNING


@register
class DataParallelLossPerReplica(Rule):
    """## What it does
    Flags `loss.backward()` on the output of an `nn.DataParallel` model whose `forward`
    returns the loss it computes (`return F.cross_entropy(logits, y)`), with no `.mean()`
    or `.sum()` in between.

    ## Why is this bad?
    DataParallel runs `forward` on each GPU and gathers what they return: a 0-dim loss per
    replica becomes a vector of one loss per GPU. `backward()` on it raises "grad can be
    implicitly created only for scalar outputs". One GPU (or the CPU) hides it: the wrapper
    is skipped or the vector has one element, so it shows on the first multi-GPU run.

    ## Example
    ```python
    model = nn.DataParallel(ModelWithLoss(net))  # forward returns F.cross_entropy(...)
    loss = model(x, y)
    loss.backward()
    ```

    ## Use instead
    ```python
    loss = model(x, y).mean()  # one loss per GPU: average them
    loss.backward()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [pytorch/pytorch#9811: DataParallel does not work with tensors of dimension 0](https://github.com/pytorch/pytorch/issues/9811)
    """

    code = "TP419"
    name = "data-parallel-loss-per-replica"
    severity = Severity.ERROR


@register
class PaddedEvaluationSampler(Rule):
    """## What it does
    Flags an unshuffled `DistributedSampler` (`shuffle=False`, an evaluation's) whose
    loader feeds a loop with no `backward()`, in a function that then sums the processes'
    numbers with `all_reduce` or `reduce`.

    ## Why is this bad?
    To give every process as many samples, `DistributedSampler` pads the dataset with
    repeats of its first samples until its size is a multiple of the number of processes
    (unless `drop_last=True`, which drops the rest instead). An evaluation then counts those
    samples twice, and the reduced metric is off whenever the dataset's size is not a
    multiple of the world size: a number that changes with the number of GPUs.

    ## Example
    ```python
    sampler = DistributedSampler(val_set, shuffle=False)
    for x, y in DataLoader(val_set, sampler=sampler):
        correct += (model(x).argmax(1) == y).sum()
    dist.all_reduce(correct)
    ```

    ## Use instead
    ```python
    # each process takes every world-th sample, none twice
    indices = range(rank, len(val_set), world_size)
    loader = DataLoader(Subset(val_set, indices))
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - The padding is documented in `torch.utils.data.distributed.DistributedSampler`.
    """

    code = "TP420"
    name = "padded-evaluation-sampler"
    severity = Severity.WARNING


@register
class SummedMeanNotAveraged(Rule):
    """## What it does
    Flags `dist.all_reduce` summing (its default operation) a mean, a loss or a ratio that
    each process computed, where nothing divides the sum by the number of processes
    afterwards: in the function that reduces it, or, for a helper that returns the sum, at
    the calls that hand it a mean.

    ## Why is this bad?
    The sum of every process's mean is the world size times the mean. The logged loss or
    accuracy, a best-checkpoint test or an early stop that reads it changes with the number
    of GPUs, and it is wrong on any number but one.

    ## Example
    ```python
    def reduce_tensor(t):
        reduced = t.clone()
        dist.all_reduce(reduced)
        return reduced

    print(reduce_tensor(loss.detach()).item())
    ```

    ## Use instead
    ```python
    dist.all_reduce(reduced, op=dist.ReduceOp.AVG)  # or divide by dist.get_world_size()
    ```

    ## Fix safety
    No automatic fix: a helper that returns the sum may be meant for counts too.

    ## References
    - [HRNet/HRNet-Semantic-Segmentation#34](https://github.com/HRNet/HRNet-Semantic-Segmentation/issues/34)
    """

    code = "TP421"
    name = "summed-mean-not-averaged"
    severity = Severity.WARNING


@register
class LoadRacesRankZeroSave(Rule):
    """## What it does
    Flags a `torch.load(path)` that every process runs after a `torch.save(..., path)` that
    only rank 0 runs (under a rank check), in a distributed script that never calls
    `dist.barrier()`.

    ## Why is this bad?
    Nothing makes the other processes wait for rank 0 to finish writing. They read the file
    while it is being written (a truncated or half-pickled checkpoint: `EOFError`, "unpickling
    stack underflow"), before it exists, or the previous epoch's copy, so each rank may end
    with different weights. It fails now and then, which makes it hard to trace.

    ## Example
    ```python
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), best_path)
    ...
    model.module.load_state_dict(torch.load(best_path, map_location=device))
    ```

    ## Use instead
    ```python
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), best_path)
    dist.barrier()  # every process waits until the file is written
    model.module.load_state_dict(torch.load(best_path, map_location=device))
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [huggingface/transformers#10685](https://github.com/huggingface/transformers/pull/10685)
    """

    code = "TP422"
    name = "load-races-rank-zero-save"
    severity = Severity.WARNING


@register
class ParameterUnusedUnderDdp(Rule):
    """## What it does
    Flags a trainable parameter (`self.x = nn.Parameter(...)`) of a module class that is read
    only under a switch that is off (`if self.apply_masking:` where `__init__` defaults it to
    `False` and no call of the class turns it on), in a file that wraps models in
    `DistributedDataParallel` without `find_unused_parameters=True`.

    ## Why is this bad?
    DDP expects a gradient for every parameter at every step. A parameter that the forward
    pass never reads gets none, and the next iteration stops with "Expected to have finished
    reduction in the prior iteration before starting a new one". The same program runs fine
    on one GPU, so it shows only when the job goes multi-GPU.

    ## Example
    ```python
    self.mask_embed = nn.Parameter(torch.zeros(dim))  # used only if self.apply_masking
    model = DDP(model, device_ids=[rank])
    ```

    ## Use instead
    ```python
    if apply_masking:  # make it only when it is used
        self.mask_embed = nn.Parameter(torch.zeros(dim))
    # or: DDP(model, device_ids=[rank], find_unused_parameters=True)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [DistributedDataParallel: find_unused_parameters](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    """

    code = "TP423"
    name = "parameter-unused-under-ddp"
    severity = Severity.WARNING
