"""Rules of one family; see registry.FAMILIES."""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register

__all__: list[str] = []


# --- static rules (analyze): TP200-TP249 -------------------------------------------------


@register
class LoaderWithoutPinMemory(Rule):
    """## What it does
    Flags a `DataLoader` without `pin_memory=True` in a file that moves its batches to an
    accelerator; `pin_memory=False` said outright only where the file copies with
    `non_blocking=True`.

    ## Why is this bad?
    Copies from pageable host memory are staged through a pinned buffer by the driver, often at
    half the bandwidth, and cannot overlap with compute even with `non_blocking=True`.

    A suggestion (info) by itself: pinning costs host memory and time of its own, and small
    batches gain little. A warning where the file copies its batches with
    `non_blocking=True`: that asks for an overlap only pinned memory gives.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=torch.cuda.is_available())
    ```

    ## Fix safety
    Safe: pins only when CUDA is available, which never changes the values of a batch.

    ## References
    - [A guide on good usage of non_blocking and pin_memory()](https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html)
    """

    code = "TP201"
    name = "loader-without-pin-memory"
    severity = Severity.INFO


@register
class CopyWithoutNonBlocking(Rule):
    """## What it does
    Flags a host-to-device copy (`.to(device)`, `.cuda()`) of a tensor in the hot loop
    without `non_blocking=True`. Device-to-host copies are never flagged.

    ## Why is this bad?
    A blocking copy makes the Python thread wait for the transfer, so the next batch cannot be
    queued while the GPU computes.

    ## Example
    ```python
    for x, y in loader:
        x = x.to(device)
    ```

    ## Use instead
    ```python
    for x, y in loader:
        x = x.to(device, non_blocking=True)
    ```

    ## Fix safety
    Unsafe: if the host tensor is modified in place right after the call, the device copy may
    see the new values.
    """

    code = "TP202"
    name = "copy-without-non-blocking"
    severity = Severity.INFO


@register
class PinMemoryOnMainThread(Rule):
    """## What it does
    Flags `.pin_memory()` called on a tensor in the hot loop (or chained into `.to()`).

    ## Why is this bad?
    Pinning allocates page-locked memory and copies the tensor into it on the calling thread:
    `x.pin_memory().to(device, non_blocking=True)` can be up to twice as slow as a plain
    `.to(device)`.

    ## Example
    ```python
    x = x.pin_memory().to(device, non_blocking=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, pin_memory=True)  # pinned in a background thread
    x = x.to(device, non_blocking=True)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP203"
    name = "pin-memory-on-main-thread"
    severity = Severity.WARNING


@register
class ItemInHotLoop(Rule):
    """## What it does
    Flags `.item()` and `.tolist()` on a tensor inside the hot loop, and `scaler.get_scale()`
    (which reads the loss scale with `.item()`) at every step. The hot loop includes the
    same-file functions it calls, callbacks dispatched over a list (`cb.on_batch_end(...)`)
    and hooks registered with `register_hook`/`register_forward_hook`.

    ## Why is this bad?
    Reading a value on the host waits for every queued kernel to finish: the GPU runs dry
    at every step while Python waits, then waits again for the next batch.

    One read per step (a running loss for the progress bar) costs one wait per step: a
    suggestion (info), as most programs can afford it. Reads in a loop inside the step (one
    per sample or per class) are a warning: they wait many times per step.

    ## Example
    ```python
    for x, y in loader:
        ...
        total += loss.item()
    ```

    At run time, a sync that torch or another library makes on the user's behalf is
    reported at the user's line that called it only when the user has a cheaper way, and the
    finding names it: `GradScaler.step` reads `found_inf` with `.item()` unless the
    optimizer is created with `fused=True` (a suggestion, severity info); an optimizer whose
    step counters were loaded onto the device (`torch.load(..., map_location=device)`) reads
    them with `.item()` on every step (a warning: load on the CPU and let
    `optimizer.load_state_dict` place the state). A library sync with no cheaper way (GradScaler
    with an optimizer that has no fused step) stays in the sync inventory and is no finding.

    ## Use instead
    ```python
    total = torch.zeros((), device=device)
    for x, y in loader:
        ...
        total += loss.detach()
    print(total.item())
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP204"
    name = "item-in-hot-loop"
    severity = Severity.INFO


@register
class DeviceToHostInHotLoop(Rule):
    """## What it does
    Flags `.cpu()` and `.numpy()` on a tensor inside the hot loop.

    ## Why is this bad?
    A device-to-host copy synchronizes with the GPU at every step, and moves data that is
    usually only needed once per epoch.

    Once per step it is a suggestion (info); in a loop inside the step it is a warning.

    ## Example
    ```python
    for x, y in loader:
        preds.append(model(x).argmax(1).cpu())
    ```

    ## Use instead
    Keep results on the device (`torch.cat` them) and copy once after the loop.

    ## Fix safety
    No automatic fix.
    """

    code = "TP205"
    name = "device-to-host-in-hot-loop"
    severity = Severity.INFO


@register
class ImplicitSyncInHotLoop(Rule):
    """## What it does
    Flags `float(t)`, `int(t)`, `bool(t)`, `print(t)` and `if t:` on a tensor inside the hot
    loop, ops whose output size depends on the values (`torch.unique`, `nonzero`), and
    boolean-mask indexing (`x[x > 0]`, `out[sel] = f(x[sel])` after `sel = types == t`; not a
    number written through a mask, `x[mask] = 0.0`, which is a `masked_fill_`).

    ## Why is this bad?
    Each one reads the tensor's value on the host, which waits for the GPU to finish all
    queued work: a hidden synchronization at every step.

    Once per step it is a suggestion (info); in a loop inside the step it is a warning.

    ## Example
    ```python
    if loss > 10:
        break
    ```

    ## Use instead
    Check such conditions every N steps, or keep the test on the device
    (`torch.where`, masking).

    ## Fix safety
    No automatic fix.
    """

    code = "TP206"
    name = "implicit-sync-in-hot-loop"
    severity = Severity.INFO


@register
class SynchronizeInHotLoop(Rule):
    """## What it does
    Flags `torch.cuda.synchronize()` and `torch.cuda.empty_cache()` inside the hot loop.

    ## Why is this bad?
    `synchronize()` stalls the CPU until the GPU is idle at every step; `empty_cache()` returns
    cached memory to the driver only for the allocator to ask for it again, with a sync each
    time.

    ## Example
    ```python
    for x, y in loader:
        ...
        torch.cuda.empty_cache()
    ```

    ## Use instead
    Remove it; synchronize only when timing, outside the loop.

    ## Fix safety
    No automatic fix.
    """

    code = "TP207"
    name = "synchronize-in-hot-loop"
    severity = Severity.WARNING


@register
class NonBlockingHostReadBeforeSync(Rule):
    """## What it does
    Flags a device-to-host copy made with `non_blocking=True` whose result is read before any
    synchronization.

    ## Why is this bad?
    The copy is only queued: the host tensor may still hold garbage (or zeros) when it is
    read. The result is silently wrong, with no error.

    ## Example
    ```python
    y = x.to("cpu", non_blocking=True)
    print(y.sum())
    ```

    ## Use instead
    ```python
    y = x.to("cpu", non_blocking=True)
    torch.cuda.synchronize()
    print(y.sum())
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [A guide on good usage of non_blocking and pin_memory()](https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html)
    """

    code = "TP208"
    name = "non-blocking-host-read-before-sync"
    severity = Severity.ERROR


@register
class LossAccumulatedAsTensor(Rule):
    """## What it does
    Flags a loss tensor added into an accumulator across steps (`total += loss`).

    ## Why is this bad?
    The accumulator keeps a reference to every step's autograd graph, so memory grows until
    the epoch ends (or the GPU runs out).

    ## Example
    ```python
    total += loss
    ```

    ## Use instead
    ```python
    total += loss.detach()
    ```

    ## Fix safety
    Unsafe: the accumulator no longer requires grad.
    """

    code = "TP209"
    name = "loss-accumulated-as-tensor"
    severity = Severity.ERROR


@register
class LoaderWithoutWorkers(Rule):
    """## What it does
    Flags a `DataLoader` with no `num_workers` (or `num_workers=0`) in a file that moves its
    batches to an accelerator.

    ## Why is this bad?
    With no workers, loading and collating happen on the training thread: the GPU idles while
    each batch is prepared.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4, persistent_workers=True)
    ```

    ## Fix safety
    No automatic fix: the dataset must be picklable and the right number depends on the
    machine.
    """

    code = "TP210"
    name = "loader-without-workers"
    severity = Severity.INFO


@register
class TimingWithoutSynchronize(Rule):
    """## What it does
    Flags a clock read (`time.perf_counter()`, `time.time()`) that ends the timing of a model
    call on the accelerator with no synchronization since the call: no
    `torch.cuda.synchronize()`, no `.item()` or `.cpu()` in between. Also a callback's timer
    that starts in one hook (`on_batch_start`) and stops in another (`on_batch_end`), or a
    per-layer timer started in a forward pre-hook and stopped in a forward hook, with no wait
    in either.

    ## Why is this bad?
    CUDA runs asynchronously: the call returns once its kernels are queued. The clock then
    measures the launch, not the compute, and FPS or latency figures come out many times too
    good (until a later sync makes another line look slow).

    ## Example
    ```python
    start = time.perf_counter()
    output = model(batch)
    elapsed = time.perf_counter() - start
    ```

    ## Use instead
    ```python
    start = time.perf_counter()
    output = model(batch)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP211"
    name = "timing-without-synchronize"
    severity = Severity.WARNING


# --- runtime rules (torchport run): TP250-TP299 ------------------------------------------


@register
class InputStarvation(Rule):
    """## What it does
    Measures, per DataLoader, the time the training loop waits for the next batch against the
    time it spends in the step, and reports loaders whose wait is a large share.

    ## Why is this bad?
    While the loop waits for data the accelerator idles; a faster GPU does not make such a
    loop faster. Under `--simulate` the step runs at CPU speed, so the share measured there is
    a lower bound of what a real GPU will wait.

    A handful of short steps is no evidence: start-up and the scheduler's noise dominate it.
    The finding needs at least 24 timed batches (the first of each pass is start-up), a second
    of loop time, and a wait of 10 % or more in two of three windows of 8 batches; it says how
    many batches and seconds it measured.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64)  # loads on the main thread
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True,
                        persistent_workers=True)
    ```
    or wrap it in `torchport.DeviceLoader` to copy the next batch while the step runs.

    ## Fix safety
    No automatic fix: the right number of workers depends on the machine.

    ## References
    - The TensorBoard profiler plugin flags a DataLoader above 5 % of step time.
    """

    code = "TP250"
    name = "input-starvation"
    severity = Severity.WARNING


@register
class NonBlockingCopyFromPageable(Rule):
    """## What it does
    Flags, at run time, `non_blocking=True` host-to-device copies whose source is pageable
    (not pinned) memory.

    ## Why is this bad?
    A copy from pageable memory is staged through a pinned buffer by the driver and does not
    overlap with compute, so `non_blocking=True` buys nothing there.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64)
    for x, y in loader:
        x = x.to("cuda", non_blocking=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - PyTorch tutorial "A guide on good usage of non_blocking and pin_memory()".
    """

    code = "TP251"
    name = "non-blocking-copy-from-pageable"
    severity = Severity.INFO


@register
class PinnedSourceOverwrittenInFlight(Rule):
    """## What it does
    Reports, at run time, a write into a pinned host buffer (an indexed write, `copy_`,
    `fill_`, `zero_`) while a `non_blocking=True` copy from it to the device may still be
    running: no synchronization since the copy (under `--simulate`), or the copy seen still
    in flight (on a GPU).

    ## Why is this bad?
    A copy from pinned memory with `non_blocking=True` returns at once and reads the host
    buffer later, when the GPU gets to it. A staging buffer reused at the next step (a
    decode loop's slot table, a prefetcher's batch) is then overwritten under the copy: the
    device receives the next step's values, or a mix. The CPU runs copies at once, so nothing
    shows there.

    ## Example
    ```python
    for step in range(n):
        staging[:n] = torch.tensor(positions)
        device_buf[:n].copy_(staging[:n], non_blocking=True)
        out = model(device_buf)  # the next step overwrites staging under the copy
    ```

    ## Use instead
    ```python
    copied = torch.cuda.Event()
    for step in range(n):
        copied.synchronize()  # the previous copy has read the buffer
        staging[:n] = torch.tensor(positions)
        device_buf[:n].copy_(staging[:n], non_blocking=True)
        copied.record()
        out = model(device_buf)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP252"
    name = "pinned-source-overwritten-in-flight"
    severity = Severity.ERROR


@register
class HostConversionBeforeCopy(Rule):
    """## What it does
    Reports, at run time, a blocking copy to the device that also converts an integer or
    boolean host tensor to a wider floating dtype in the same `.to()` call
    (`frames.to(device, dtype=torch.float32)` of uint8 images), at a line that does it at
    every step.

    ## Why is this bad?
    For a blocking copy between devices PyTorch converts on the source device first, to spare
    device memory: the CPU converts the batch, and the float32 result (4 times the bytes of
    uint8) crosses the bus. Copying the narrow tensor and converting it on the device moves a
    quarter of the bytes, and the GPU converts it in microseconds.

    ## Example
    ```python
    state = frames[idx].to(device, dtype=torch.float32).div_(255)
    ```

    ## Use instead
    ```python
    state = frames[idx].to(device).float().div_(255)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - `copy_kernel_cuda` in ATen's Copy.cu: "For blocking transfers conversions are
      performed on CPU to avoid allocating extra GPU memory".
    """

    code = "TP253"
    name = "host-conversion-before-copy"
    severity = Severity.WARNING


@register
class TensorFromDeviceScalars(Rule):
    """## What it does
    Reports, at run time, `torch.tensor(...)` (or `as_tensor`, `new_tensor`) of a list that
    holds many device tensors: the token ids or log-probabilities a generation loop collected
    one step at a time (`torch.tensor(self.token_list)`).

    ## Why is this bad?
    torch reads each element of the list on the host: one device-to-host copy, and one wait
    for the GPU, per element. `torch.stack` joins them on the device, and one `.cpu()` then
    copies them all at once.

    ## Example
    ```python
    ids = torch.tensor(self.token_list, dtype=torch.long)
    ```

    ## Use instead
    ```python
    ids = torch.stack(self.token_list).long().cpu()
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP254"
    name = "tensor-from-device-scalars"
    severity = Severity.WARNING
