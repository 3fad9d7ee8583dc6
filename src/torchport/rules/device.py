"""TP1xx: device placement (static TP100-TP108 and TP117-TP120, runtime TP150-TP151, port notes
TP198-TP199).

The device-specific torch API rules (TP109-TP114) are in ``device_api.py``.
"""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register


@register
class UndecidableDevicePlacement(Rule):
    """## What it does
    Flags device-dependent code that `torchport port` could not rewrite safely, such as a tensor
    made inside a helper that receives no tensor to take the device from, a legacy typed tensor
    constructor, or a loop over a loader whose batch cannot be named.

    ## Why is this bad?
    The code runs on the CPU but breaks, or silently computes on the CPU, once the model and the
    batches live on an accelerator. The port leaves it unchanged rather than guess.

    ## Example
    ```python
    def causal_mask(n):
        return torch.triu(torch.ones(n, n), diagonal=1).bool()
    ```

    ## Use instead
    ```python
    def causal_mask(n, device):
        return torch.triu(torch.ones(n, n, device=device), diagonal=1).bool()
    ```

    ## Fix safety
    No automatic fix: the right device depends on how the code is called.
    """

    code, name, severity = "TP199", "undecidable-device-placement", Severity.WARNING


@register
class PortNotVerified(Rule):
    """## What it does
    Reports that `torchport port --verify` ran the ported program and it did not run to the
    end on the device (real, or simulated where there is no GPU), or that its printed results
    differ from the original's beyond the tolerance.

    ## Why is this bad?
    The diff would not do what it promises: the ported program fails on the GPU, or computes
    something else than the CPU program did.

    ## Example
    ```console
    $ torchport port --verify train.py -- --epochs 1
    train.py:0:0: TP198 error port-not-verified: the port did not run on a simulated CUDA
    device: failed (exit 1): RuntimeError: Expected all tensors to be on the same device...
    ```

    ## Use instead
    Read the run's explanation (the creation site of the tensor left on the CPU), move that
    tensor where it is made, and run `port --verify` again.

    ## Fix safety
    No automatic fix beyond the repairs `--verify` already tried.
    """

    code, name, severity = "TP198", "port-not-verified", Severity.ERROR


# --- static rules (analyze): TP100-TP149 -------------------------------------------------


@register
class UnparsableFile(Rule):
    """## What it does
    Reports a file that `torchport check` could not analyse: it does not parse, is not UTF-8,
    is binary, or cannot be read.

    ## Why is this bad?
    Nothing in the file was checked, so every other rule is silent about it. Python would
    also fail to import a file that does not parse.

    ## Example
    ```python
    def train(:
    ```

    ## Use instead
    Fix the syntax error or the encoding (save the file as UTF-8).

    ## Fix safety
    No automatic fix.
    """

    code = "TP100"
    name = "unparsable-file"
    severity = Severity.ERROR


@register
class ToResultDiscarded(Rule):
    """## What it does
    Flags a call to a tensor's `.to()`, `.cuda()`, `.cpu()`, `.float()`, `.half()` (and the
    other casts) whose result is thrown away.

    ## Why is this bad?
    `Module.to()` moves a model in place, but `Tensor.to()` returns a new tensor and leaves the
    original where it was. The tensor stays on the CPU (or keeps its dtype) and the next
    operation with the model fails with a device mismatch.

    ## Example
    ```python
    x = torch.randn(8, 4)
    x.to(device)
    ```

    ## Use instead
    ```python
    x = torch.randn(8, 4)
    x = x.to(device)
    ```

    ## Fix safety
    Unsafe: assigning the result changes what the name holds afterwards.

    ## References
    - [torch.Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    """

    code = "TP101"
    name = "to-result-discarded"
    severity = Severity.ERROR


@register
class InputNotMovedToModelDevice(Rule):
    """## What it does
    Flags a tensor passed to a model that was moved to a device while the tensor was left on
    the CPU: a loader batch never moved, a `torch.from_numpy` result, or a factory call without
    `device=`.

    ## Why is this bad?
    The model's weights live on the accelerator and the input on the host, so the first layer
    raises "Expected all tensors to be on the same device".

    ## Example
    ```python
    model = Net().to(device)
    for x, y in loader:
        out = model(x)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        out = model(x)
    ```

    ## Fix safety
    Unsafe: moves the argument with `.to(<the model's device>)` at the call.
    """

    code = "TP102"
    name = "input-not-moved-to-model-device"
    severity = Severity.ERROR


@register
class TensorCreatedInForward(Rule):
    """## What it does
    Flags a tensor factory (`torch.zeros`, `torch.randn`, `torch.arange`, `torch.tensor`...)
    called without `device=` inside a module's `forward`, or in a helper method it calls.

    ## Why is this bad?
    The new tensor is made on the CPU while the module's inputs and weights are on the
    accelerator: a device mismatch, or a hidden host-to-device copy on every call.

    ## Example
    ```python
    def forward(self, x):
        noise = torch.randn(x.shape)
        return self.fc(x + noise)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        noise = torch.randn(x.shape, device=x.device)
        return self.fc(x + noise)
    ```

    ## Fix safety
    Unsafe: adds `device=<first input>.device`, which assumes that input is a tensor.
    """

    code = "TP103"
    name = "tensor-created-in-forward"
    severity = Severity.ERROR


@register
class CpuTensorThenMoved(Rule):
    """## What it does
    Flags a tensor built on the CPU and moved right away: `torch.zeros(...).to(device)` or
    `torch.randn(...).cuda()`; also a table that `forward` computes from sizes alone, with
    NumPy (`torch.from_numpy(posenc(self.dim, n)).to(device)`) or in a helper of the file
    that calls torch factories without `device=` (`coords_grid(n, h, w).to(x.device)`), and
    copies at every call.
    `torchport run` also reports a host tensor that the same line
    copies to the device at every step: a plain tensor attribute of a module, or one table
    (a diffusion schedule), unchanged since its last copy.

    ## Why is this bad?
    The tensor is allocated and filled on the host, then copied over the bus. Creating it on
    the device directly skips both the host allocation and the copy.

    ## Example
    ```python
    mask = torch.ones(n, n).to(device)
    ```

    ## Use instead
    ```python
    mask = torch.ones(n, n, device=device)
    ```

    ## Fix safety
    Safe for `torch.zeros/ones/empty/full/eye/arange/linspace`. Unsafe for random factories
    (the random numbers come from the device's generator instead of the CPU's) and
    `torch.tensor`.
    """

    code = "TP104"
    name = "cpu-tensor-then-moved"
    severity = Severity.WARNING


@register
class TensorAttributeNotBuffer(Rule):
    """## What it does
    Flags a tensor assigned as a plain attribute (`self.scale = torch.ones(n)`) in the
    `__init__` of an `nn.Module` (or of a layer subclass such as `class BinaryConv(nn.Conv2d)`),
    or in a method `__init__` calls (`self.set_schedule(...)`); also
    `setattr(self, f"pos_embed{i}", table)` of a tensor made on the CPU (a warning: the name is
    built at run time, so whether `forward` moves it is not known). In a file that wraps its
    model in `nn.DataParallel`, a plain tensor attribute put on the device in `__init__`
    (`self.table = make_table().to(device)`) is flagged too, unless every read moves it.

    ## Why is this bad?
    `model.to(device)` moves parameters and buffers only: the plain tensor stays on the CPU
    and the forward pass fails with a device mismatch. It is also missing from `state_dict()`.
    `nn.DataParallel` copies parameters and buffers to each GPU for its replicas, but not a
    plain attribute: the replicas on the other GPUs meet it on the first one.

    ## Example
    ```python
    self.scale = torch.ones(hidden)
    ```

    ## Use instead
    ```python
    self.register_buffer("scale", torch.ones(hidden))
    ```

    ## Fix safety
    Unsafe: the buffer appears in `state_dict()`, so checkpoints change shape.

    ## References
    - [Module.register_buffer](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer)
    """

    code = "TP105"
    name = "tensor-attribute-not-buffer"
    severity = Severity.ERROR


@register
class ModulesInPlainContainer(Rule):
    """## What it does
    Flags submodules or parameters stored in a plain `list` or `dict` attribute of an
    `nn.Module`.

    ## Why is this bad?
    PyTorch does not see inside plain containers: `model.to(device)` leaves those layers on
    the CPU, `model.parameters()` misses them (the optimizer never trains them) and they are
    absent from `state_dict()`.

    ## Example
    ```python
    self.layers = [nn.Linear(8, 8), nn.Linear(8, 8)]
    ```

    ## Use instead
    ```python
    self.layers = nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 8)])
    ```

    ## Fix safety
    Unsafe: the wrapped layers join `parameters()` and `state_dict()`.
    """

    code = "TP106"
    name = "modules-in-plain-container"
    severity = Severity.ERROR


@register
class TorchLoadWithoutMapLocation(Rule):
    """## What it does
    Flags `torch.load(...)` without `map_location`, except of a file the same program wrote
    from NumPy or host values, and in a program whose every `torch.save` (a writer thread's
    `Thread(target=torch.save, ...)` included) writes host copies.

    ## Why is this bad?
    Tensors are restored on the device they were saved from. A checkpoint saved on a GPU fails
    to load on a machine without one, and one saved on `cuda:1` lands on `cuda:1` for every
    process.

    ## Example
    ```python
    state = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", map_location="cpu")
    ```

    ## Fix safety
    Unsafe: adds `map_location="cpu"`, so tensors that used to load on a GPU now load on the
    CPU (a later `.to(device)` or `load_state_dict` moves them).
    """

    code = "TP107"
    name = "torch-load-without-map-location"
    severity = Severity.WARNING


@register
class NumpyOfDeviceTensor(Rule):
    """## What it does
    Flags `.numpy()` on a tensor that was moved to a device (or produced by a model that was).

    ## Why is this bad?
    `.numpy()` only works on CPU tensors: on an accelerator it raises "can't convert cuda:0
    device type tensor to numpy".

    ## Example
    ```python
    preds = model(x).argmax(1).numpy()
    ```

    ## Use instead
    ```python
    preds = model(x).argmax(1).cpu().numpy()
    ```

    ## Fix safety
    Safe: `.cpu()` returns the tensor itself when it is already on the CPU.
    """

    code = "TP108"
    name = "numpy-of-device-tensor"
    severity = Severity.ERROR


@register
class ParameterMovedAtCreation(Rule):
    """## What it does
    Flags `nn.Parameter(t).to(device)`, `nn.Parameter(t).cuda()` and dtype casts such as
    `nn.Parameter(t).half()`: a parameter moved or cast right where it is made. Also a tensor
    that asks for gradients and is then moved, `t.requires_grad_().to(device)` or
    `torch.zeros(n, requires_grad=True).cuda()`; under `run`, an optimizer refusing a
    non-leaf tensor.

    ## Why is this bad?
    `.to()` of a Parameter returns a plain tensor computed from it (not a leaf, not a
    Parameter) whenever it has to copy, as it does on a GPU. Assigned to `self.x`, it is not
    registered: `parameters()` misses it, so the optimizer never trains it, and
    `state_dict()` does not save it. On the CPU `.to("cpu")` returns the Parameter itself,
    so the bug only shows on the accelerator. The same holds for a tensor optimized in place
    (an image in style transfer, an adversarial perturbation): the moved copy is not a leaf,
    its `.grad` stays None, and `torch.optim` refuses it ("can't optimize a non-leaf Tensor").

    ## Example
    ```python
    self.log_temp = nn.Parameter(torch.zeros(1)).to(device)
    ```

    ## Use instead
    ```python
    self.log_temp = nn.Parameter(torch.zeros(1, device=device))
    # or make it on the CPU and move the whole module: model.to(device)
    ```

    ## Fix safety
    Unsafe: moves the call inside, `nn.Parameter(t.to(device))`, which registers the
    parameter (it joins `parameters()` and `state_dict()`). Safe for `requires_grad_()`:
    `t.to(device).requires_grad_()` is the same tensor as before on the CPU.

    ## References
    - [pytorch/pytorch#9303](https://github.com/pytorch/pytorch/issues/9303)
    - [pytorch/pytorch#17484](https://github.com/pytorch/pytorch/issues/17484)
    """

    code = "TP117"
    name = "parameter-moved-at-creation"
    severity = Severity.ERROR


@register
class CpuGeneratorForDeviceTensor(Rule):
    """## What it does
    Flags a `torch.Generator()` made without `device=` (or on the CPU) and passed as
    `generator=` to a random function (`torch.randn`, `torch.randint`, `torch.randperm`,
    `torch.multinomial`, `torch.bernoulli`, `Tensor.normal_`...) that makes or fills a
    tensor on a device that may be an accelerator (`device=` other than "cpu", or an input
    moved to one). The generator is followed through variables, `self` attributes, closures,
    default arguments and the arguments of same-file helper functions.

    ## Why is this bad?
    A generator draws numbers on its own device only: with a CUDA tensor the call raises
    "Expected a 'cuda' device type for generator but found 'cpu'". On the CPU both are on
    the host and the program runs. `run` also reports the reverse, a generator made on the
    device drawing a host tensor (`torch.rand(n, generator=gpu_gen)` without `device=`):
    "Expected a 'cpu' device type for generator but found 'cuda'".

    ## Example
    ```python
    gen = torch.Generator().manual_seed(0)
    noise = torch.randn(8, 4, generator=gen, device=device)
    ```

    ## Use instead
    ```python
    gen = torch.Generator(device=device).manual_seed(0)
    noise = torch.randn(8, 4, generator=gen, device=device)
    ```

    ## Fix safety
    No automatic fix: a generator on the device draws other numbers than the CPU one, and
    may also serve CPU draws (a DataLoader's sampler).

    ## References
    - [torch.Generator](https://pytorch.org/docs/stable/generated/torch.Generator.html)
    - [pytorch/pytorch#62152](https://github.com/pytorch/pytorch/issues/62152)
    """

    code = "TP118"
    name = "cpu-generator-for-device-tensor"
    severity = Severity.ERROR


@register
class DeviceCapturedInInit(Rule):
    """## What it does
    Flags a method of an `nn.Module` that uses `self.<attr>` as a device (`device=self.<attr>`,
    `.to(self.<attr>)`) when `__init__` set it to `next(self.parameters()).device` (or
    `self.<layer>.weight.device`, or `torch.device("cpu")`). It is reported at the first such
    use, with the line in `__init__`.

    ## Why is this bad?
    `__init__` runs before `model.to(device)`, so the attribute records the CPU and keeps
    it: the module moves, the attribute does not, and the tensors made or moved with it
    stay on the CPU and meet the module's weights on the GPU.

    Not flagged when `<attr>` is a property of the class, or when the class overrides `to`,
    `cuda` or `_apply` (which may update it), or assigns it again in another method.

    ## Example
    ```python
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.device = next(self.parameters()).device

    def forward(self, x):
        return self.net(x + torch.randn(x.shape, device=self.device))
    ```

    ## Use instead
    ```python
    @property
    def device(self):
        return next(self.parameters()).device
    ```

    ## Fix safety
    No automatic fix: read the device where it is needed (an input's `.device`, or a
    property).

    ## References
    - [yandexdataschool/Practical_RL#170](https://github.com/yandexdataschool/Practical_RL/pull/170)
    """

    code = "TP119"
    name = "device-captured-in-init"
    severity = Severity.WARNING


@register
class OptimizerStateLoadedBeforeMove(Rule):
    """## What it does
    Flags `optimizer.load_state_dict(...)` (directly, or in a same-file helper that receives
    the optimizer) when the model whose parameters the optimizer holds is moved with
    `.to(device)` or `.cuda()` later in the same function, or by the caller of a helper that
    builds the model, loads the optimizer and returns the model unmoved. Also flags
    `torch.optim.Adagrad(model.parameters())` built before `model` moves (here, or in another
    method of the same class): Adagrad makes its state when built, so the state stays on the
    CPU unless it is loaded again after the move. At run time, a device error in the step
    names the `load_state_dict` line.

    ## Why is this bad?
    `Optimizer.load_state_dict` casts the loaded state (Adam's moments, say) to the device
    its parameters are on at that moment: the CPU. Moving the model afterwards moves the
    parameters but not the optimizer state, and the first `optimizer.step()` on the GPU
    fails with a device mismatch.

    ## Example
    ```python
    model = Net()
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.load_state_dict(ckpt["optimizer"])
    model.to(device)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.load_state_dict(ckpt["optimizer"])
    ```

    ## Fix safety
    No automatic fix: move the model before the optimizer is built and loaded.

    ## References
    - [pytorch/pytorch#2830](https://github.com/pytorch/pytorch/issues/2830)
    - [torch.optim.Optimizer.load_state_dict](https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.load_state_dict.html)
    """

    code = "TP120"
    name = "optimizer-state-loaded-before-move"
    severity = Severity.ERROR


# --- runtime rules (torchport run): TP150-TP198 ------------------------------------------


@register
class TensorsOnDifferentDevices(Rule):
    """## What it does
    Explains an op that failed because its tensors live on different devices: for each tensor
    argument, its device, the line and call that created it, and the module that was running.
    `check` reports the same mistake when an op, a loss or a layer evidently receives a tensor
    made on the CPU together with one moved to an accelerator.

    ## Why is this bad?
    The program stops with "Expected all tensors to be on the same device" and no hint which
    tensor is wrong or where it came from; the usual causes (a tensor made inside `forward`
    without `device=`, a tensor attribute that is not a buffer, layers in a plain list, a batch
    that was never moved) all look the same in that message.

    ## Example
    ```python
    noise = torch.randn(x.shape)  # on the CPU while x is on cuda:0
    return self.head(x + noise)
    ```

    ## Use instead
    ```python
    noise = torch.randn(x.shape, device=x.device)
    ```

    ## Fix safety
    No automatic fix: the report names the line to change.
    """

    code = "TP150"
    name = "tensors-on-different-devices"
    severity = Severity.ERROR


@register
class ComputeOnCpuBesideAccelerator(Rule):
    """## What it does
    Reports, at run time, the share of tensor ops that ran on the CPU while an accelerator was
    available (or simulated), with the lines that ran most of them.

    ## Why is this bad?
    Nothing fails: the model, or part of it, silently trains on the CPU at a fraction of the
    speed the GPU would give.

    Only the ops of a module's forward pass count; work that a DataLoader does while it
    fetches a batch (transforms in `__getitem__`, collate) is the input pipeline, not the
    model. The lines named are the user's own, never a library's.

    ## Example
    ```python
    model = Net()  # never moved
    for x, y in loader:
        loss = criterion(model(x), y)
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Fix safety
    No automatic fix; `torchport port` rewrites such scripts.
    """

    code = "TP151"
    name = "compute-on-cpu-beside-accelerator"
    severity = Severity.WARNING
