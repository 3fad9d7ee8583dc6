"""TP109-TP114 and TP122-TP124: device-specific torch API (hard-coded CUDA, legacy constructors
and type checks, a device compared with a type string), static rules.

The rest of the TP1 family (device placement) is in ``device.py``; the detectors of these are
in ``torchport.analyze.checks.device_api``.
"""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register


@register
class HardCodedCuda(Rule):
    """## What it does
    Flags `"cuda"`, `torch.device("cuda")` and `.cuda()` in a file that never checks whether an
    accelerator is available.

    ## Why is this bad?
    The script crashes on machines without an NVIDIA GPU (laptops, CI, Apple silicon) instead
    of falling back to the CPU.

    ## Example
    ```python
    model = Net().cuda()
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    ```

    ## Fix safety
    No automatic fix; `torchport port` rewrites the file around one `device` variable.
    """

    code = "TP109"
    name = "hard-coded-cuda"
    severity = Severity.WARNING


@register
class HardCodedDeviceIndex(Rule):
    """## What it does
    Flags a device with a fixed index: `"cuda:1"`, `torch.device("cuda", 0)`, `.cuda(1)`,
    `torch.cuda.set_device(0)`. In a file that starts a process group, a `"cuda:N"` string set
    once (a module or class constant, a config or parameter default, a `map_location`) is
    flagged too, and so is a device index read from a setting whose default nothing in the
    file changes (`torch.cuda.set_device(cfg.device_id)` with `device_id: int = 0`).

    ## Why is this bad?
    Under `torchrun` every process must use its own GPU (`LOCAL_RANK`); a fixed index puts all
    of them on the same one, and `CUDA_VISIBLE_DEVICES` renumbering makes it fragile anyway.

    ## Example
    ```python
    model.to("cuda:1")
    ```

    ## Use instead
    ```python
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    model.to(torch.device("cuda", local_rank))
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP110"
    name = "hard-coded-device-index"
    severity = Severity.INFO


@register
class DeviceComparedToCuda(Rule):
    """## What it does
    Flags `x.device == torch.device("cuda")` and `x.device == "cuda"`.

    ## Why is this bad?
    A tensor's device always carries an index (`cuda:0`), and `torch.device("cuda:0")` is not
    equal to `torch.device("cuda")`: the comparison is always false on a GPU.

    ## Example
    ```python
    if x.device == torch.device("cuda"):
        ...
    ```

    ## Use instead
    ```python
    if x.device.type == "cuda":
        ...
    ```

    ## Fix safety
    Unsafe: the condition becomes true where it used to be false.
    """

    code = "TP111"
    name = "device-compared-to-cuda"
    severity = Severity.ERROR


@register
class LegacyTensorConstructor(Rule):
    """## What it does
    Flags the legacy constructors `torch.Tensor(...)`, `torch.FloatTensor(...)`,
    `torch.LongTensor(...)` and `torch.cuda.FloatTensor(...)`; and, in a file that runs on an
    accelerator, a conversion to a CPU type (`targets.type(torch.LongTensor)`), which also
    copies a device tensor to the host.

    ## Why is this bad?
    They tie the dtype and the device into a type name, ignore the default device, and
    `torch.Tensor(3)` makes an uninitialised tensor of size 3 rather than the value 3.

    ## Example
    ```python
    y = torch.LongTensor([1, 0, 1])
    ```

    ## Use instead
    ```python
    y = torch.tensor([1, 0, 1], dtype=torch.int64)
    ```

    ## Fix safety
    For a typed constructor given a literal list, the fix uses `torch.tensor` with the same
    dtype: safe for `torch.cuda.*Tensor` (the device is spelled out), unsafe for the CPU ones
    (`torch.tensor` follows `torch.set_default_device`, the legacy type did not). Other forms
    have no automatic fix. A conversion to a CPU type becomes the cast that keeps the device
    (`.long()`): unsafe, since the tensor then stays where it is.
    """

    code = "TP112"
    name = "legacy-tensor-constructor"
    severity = Severity.WARNING


@register
class SetDefaultTensorType(Rule):
    """## What it does
    Flags `torch.set_default_tensor_type(...)`.

    ## Why is this bad?
    It is deprecated, and setting a CUDA tensor type as the default makes every factory call
    (including those inside libraries and DataLoader workers) allocate on the GPU.

    ## Example
    ```python
    torch.set_default_tensor_type(torch.cuda.FloatTensor)
    ```

    ## Use instead
    ```python
    torch.set_default_dtype(torch.float32)
    torch.set_default_device("cuda")  # only if you really want it
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP113"
    name = "set-default-tensor-type"
    severity = Severity.WARNING


@register
class CudaTensorInDataset(Rule):
    """## What it does
    Flags tensors moved to or created on an accelerator inside a `Dataset`.

    ## Why is this bad?
    DataLoader workers are forked processes, and CUDA cannot be initialised in a forked child
    ("Cannot re-initialize CUDA in forked subprocess"). With `num_workers=0` it works but
    serialises loading with compute.

    ## Example
    ```python
    def __getitem__(self, i):
        return self.x[i].cuda()
    ```

    ## Use instead
    Return CPU tensors from the dataset, set `pin_memory=True` on the DataLoader and move each
    batch in the training loop.

    ## Fix safety
    No automatic fix.
    """

    code = "TP114"
    name = "cuda-tensor-in-dataset"
    severity = Severity.ERROR


@register
class DeviceComparedToTypeString(Rule):
    """## What it does
    Flags a device compared with a bare device type: `str(device) == "cuda"`,
    `cfg.device == "cuda"`.

    ## Why is this bad?
    A device with an index reads `"cuda:0"` (`torch.device("cuda", local_rank)`,
    `device="cuda:0"`), which is not `"cuda"`: the test is False on the GPU, and the
    program silently takes its CPU branch there (no autocast, no pinned memory, float32).

    ## Example
    ```python
    device_type = "cuda" if str(device) == "cuda" else "cpu"
    ```

    ## Use instead
    ```python
    device_type = torch.device(device).type
    ```

    A tensor's own `.device` compared so is TP111.

    ## Fix safety
    No automatic fix: a string device must become a `torch.device` first.
    """

    code = "TP122"
    name = "device-compared-to-type-string"
    severity = Severity.WARNING


@register
class LegacyTensorTypeCheck(Rule):
    """## What it does
    Flags a tensor's dtype tested through a legacy type: `isinstance(x, torch.LongTensor)`,
    `x.type() == "torch.FloatTensor"`.

    ## Why is this bad?
    The legacy types name the CPU: a CUDA tensor is a `torch.cuda.LongTensor`, so the test is
    False on the GPU and the program silently takes its other branch (a missing squeeze, a
    conversion that does not happen).

    ## Example
    ```python
    if isinstance(actions, torch.LongTensor):
        actions = actions.squeeze(1)
    ```

    ## Use instead
    ```python
    if actions.dtype == torch.int64:
        actions = actions.squeeze(1)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP123"
    name = "legacy-tensor-type-check"
    severity = Severity.WARNING


@register
class BareCudaBesideChosenDevice(Rule):
    """## What it does
    Flags `.cuda()` without an index in a file that picks its GPU by index
    (`torch.device(f"cuda:{args.gpu}")`, `torch.device("cuda", rank)`) and never makes it
    the current device (`torch.cuda.set_device`).

    ## Why is this bad?
    A bare `.cuda()` moves to the *current* device, GPU 0, not to the GPU the program chose:
    on a machine where it runs on GPU 1 the moved tensor meets tensors of another GPU ("Expected
    all tensors to be on the same device"). With one GPU, or GPU 0 chosen, it happens to work.

    ## Example
    ```python
    device = torch.device(f"cuda:{args.gpu}")
    ...
    mask = mask.cuda()
    ```

    ## Use instead
    ```python
    mask = mask.to(scores.device)
    ```

    ## Fix safety
    No automatic fix: the right device is the one of the tensors it meets.
    """

    code = "TP124"
    name = "bare-cuda-beside-chosen-device"
    severity = Severity.WARNING


@register
class HostDeviceDefault(Rule):
    """## What it does
    Flags a call of a same-file helper whose `device` parameter defaults to the CPU
    (`def to_torch(data, device="cpu")`) and which puts tensors or layers there (`.to(device)`,
    `device=device`), when the call leaves that parameter out from code that works with a
    device (its function, or its class's `__init__`, has one at hand) in a file that uses an
    accelerator.

    ## Why is this bad?
    The helper was written for the CPU and its default survived the port: the call quietly
    copies a GPU tensor back to the host, or rebuilds a layer there after the model was moved.
    The next op mixes devices, or the work runs on the CPU.

    ## Example
    ```python
    def to_torch(data, device="cpu"):
        return torch.as_tensor(data).to(device)

    self.acc[sl] += to_torch(pred) * self.window  # self.acc is on the GPU
    ```

    ## Use instead
    ```python
    self.acc[sl] += to_torch(pred, device=self.acc.device) * self.window
    ```

    ## Fix safety
    No automatic fix: which device the call means is for the caller to say.

    ## References
    - [ZettaAI/zetta_utils#427](https://github.com/ZettaAI/zetta_utils/pull/427)
    """

    code = "TP125"
    name = "host-device-default"
    severity = Severity.WARNING
