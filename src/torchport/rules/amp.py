"""Rules of one family; see registry.FAMILIES. Mixed precision (AMP) rules of TP3xx."""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register

__all__: list[str] = []


# --- static rules (analyze): TP311-TP349 -------------------------------------------------


@register
class ClipWithoutUnscale(Rule):
    """## What it does
    Flags `clip_grad_norm_` / `clip_grad_value_` called after `scaler.scale(loss).backward()`
    without `scaler.unscale_(optimizer)` in between, also in an optimizer-step helper that
    clips before its `scaler.step(optimizer)`. A same-file helper given `model.parameters()`
    that reads their `.grad` there (a gradient norm for the log) is a warning: it logs the
    scaled norm.

    ## Why is this bad?
    The gradients are still multiplied by the loss scale (65536 at first): the clipping
    threshold is compared with scaled norms, so every step is clipped to a tiny fraction of
    its size, or clipping never happens. Training silently slows down or diverges.

    ## Example
    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [Working with unscaled gradients](https://pytorch.org/docs/stable/notes/amp_examples.html#working-with-unscaled-gradients)
    """

    code = "TP311"
    name = "clip-without-unscale"
    severity = Severity.ERROR


@register
class Float16AutocastWithoutScaler(Rule):
    """## What it does
    Flags a training step under float16 autocast (an explicit `dtype=torch.float16`, a dtype
    chosen from options that include it, such as `{"float16": torch.float16, ...}[cfg.dtype]`,
    or the CUDA default) in a file that never creates a `GradScaler`; also an autocast made
    before the loop and entered by name (`ctx = torch.autocast(...)`, `with ctx:`).

    ## Why is this bad?
    float16 gradients smaller than about 6e-5 flush to zero. Without loss scaling, updates
    are silently lost: no error, no NaN, the loss just stops improving. bfloat16 has the
    range of float32 and needs no scaler.

    ## Example
    ```python
    with torch.autocast("cuda"):
        loss = criterion(model(x), y)
    loss.backward()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda"):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```
    or `torch.autocast("cuda", dtype=torch.bfloat16)` without a scaler.

    ## Fix safety
    No automatic fix.

    ## References
    - [Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    """

    code = "TP312"
    name = "float16-autocast-without-scaler"
    severity = Severity.WARNING


@register
class HalfInputToFloatLayer(Rule):
    """## What it does
    Flags a float16 or bfloat16 tensor passed to a float32 layer (one never cast with
    `.half()`/`.to(dtype)`) outside autocast, in a file that uses no autocast.

    ## Why is this bad?
    Outside autocast, a layer computes in the dtype of its weights: `Linear` and `Conv` stop
    with "mat1 and mat2 must have the same dtype" or "Input type (Half) and bias type (float)
    should be the same". Casting inputs alone is not mixed precision.

    ## Example
    ```python
    out = model(x.half())
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        out = model(x)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP313"
    name = "half-input-to-float-layer"
    severity = Severity.ERROR


@register
class ScaledLossDiscarded(Rule):
    """## What it does
    Flags `scaler.scale(loss)` used as a statement, its result thrown away.

    ## Why is this bad?
    `scale` returns a new, scaled tensor; it does not scale `loss` in place. The following
    `loss.backward()` then produces unscaled float16 gradients, which underflow, while
    `scaler.step` divides them by the scale again.

    ## Example
    ```python
    scaler.scale(loss)
    loss.backward()
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP314"
    name = "scaled-loss-discarded"
    severity = Severity.ERROR


@register
class CustomFunctionWithoutAutocastDecorators(Rule):
    """## What it does
    Flags a `torch.autograd.Function` whose `forward` lacks `@torch.amp.custom_fwd` or whose
    `backward` lacks `@torch.amp.custom_bwd`, when its backward multiplies matrices (`@`,
    `matmul`, `mm`, `linear`, `conv*`, `einsum`...), in a file that uses autocast or a
    `GradScaler`. `custom_fwd(cast_inputs=...)` alone is enough: forward then runs outside
    autocast, as backward does. A backward that casts a factor of each of its products to the
    other's dtype itself (`h @ w.to(h.dtype).t()`) is not flagged; one that does so for some
    products is flagged at the product it left out.

    ## Why is this bad?
    Under autocast, the matmuls of `forward` run in float16 while the tensors it saves stay
    float32. `backward` runs outside autocast: the float16 gradient meets the float32 saved
    tensors and the matmul stops with "expected scalar type Half but found Float" (or
    "mat1 and mat2 must have the same dtype"). `custom_bwd` replays the forward's autocast
    state in backward; `custom_fwd(cast_inputs=torch.float32)` runs the whole function in
    float32 instead.

    ## Example
    ```python
    class MaskedLinear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight):
            ctx.save_for_backward(x, weight)
            return x @ weight.t()

        @staticmethod
        def backward(ctx, grad):
            x, weight = ctx.saved_tensors
            return grad @ weight, grad.t() @ x
    ```

    ## Use instead
    ```python
    class MaskedLinear(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
        def forward(ctx, x, weight):
            ...

        @staticmethod
        @torch.amp.custom_bwd(device_type="cuda")
        def backward(ctx, grad):
            ...
    ```

    ## Fix safety
    No automatic fix: whether the function should run in float32 (`cast_inputs`) or follow
    autocast is a choice about its numerics.

    ## References
    - [Autocast and custom autograd functions](https://pytorch.org/docs/stable/notes/amp_examples.html#autocast-and-custom-autograd-functions)
    - [pytorch/pytorch#38487: expected scalar type Half but found Float](https://github.com/pytorch/pytorch/issues/38487)
    """

    code = "TP315"
    name = "custom-function-without-autocast-decorators"
    severity = Severity.WARNING


@register
class AutocastOnHostOnly(Rule):
    """## What it does
    Flags an autocast region for the CPU (`torch.autocast("cpu")`,
    `torch.autocast(device_type="cpu", ...)`, `torch.cpu.amp.autocast()`) in a file that moves
    its model or tensors to an accelerator.

    ## Why is this bad?
    Autocast applies only to ops on its own device type: on the GPU the region does nothing,
    and the program that was meant to train or evaluate in mixed precision silently runs in
    float32 (slower, more memory). It usually comes from a script first written for the CPU.

    ## Example
    ```python
    model.to(device)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        out = model(x.to(device))
    ```

    ## Use instead
    ```python
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        out = model(x.to(device))
    ```

    ## Fix safety
    No automatic fix: turning mixed precision on changes the numbers.

    ## References
    - [Automatic Mixed Precision: torch.autocast](https://pytorch.org/docs/stable/amp.html#torch.autocast)
    - [pytorch/pytorch#114458](https://github.com/pytorch/pytorch/issues/114458)
    """

    code = "TP316"
    name = "autocast-on-host-only"
    severity = Severity.WARNING


@register
class CheckpointWithoutScalerState(Rule):
    """## What it does
    Flags a checkpoint dict saved with `torch.save` that holds an optimizer's `state_dict()`
    but not the GradScaler's, in a file that makes a GradScaler and never saves or loads the
    scaler's state.

    ## Why is this bad?
    A resumed run starts from the initial loss scale (65536): the first steps after every
    resume overflow and are skipped until the scale adapts again, and the training no longer
    continues where it stopped.

    ## Example
    ```python
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    ```

    ## Use instead
    ```python
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scaler": scaler.state_dict()}, path)
    # on resume: scaler.load_state_dict(checkpoint["scaler"])
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP319"
    name = "checkpoint-without-scaler-state"
    severity = Severity.WARNING


@register
class PenaltyFromScaledGradients(Rule):
    """## What it does
    Flags `torch.autograd.grad` taken of a GradScaler-scaled output
    (`torch.autograd.grad(scaler.scale(out), inputs, create_graph=True)`) in a file that never
    reads the scale back (`scaler.get_scale()`) to divide the gradients by it.

    ## Why is this bad?
    The gradients come out multiplied by the loss scale (65536 at first). A gradient penalty
    (WGAN-GP, R1) or a gradient norm built from them is off by that factor: it pushes the norm
    towards 1/scale instead of 1 and overflows in float16, so steps are skipped and the scale
    collapses. On the CPU the scaler is disabled and the numbers look right.

    ## Example
    ```python
    (grads,) = torch.autograd.grad(scaler.scale(score.sum()), x, create_graph=True)
    penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
    ```

    ## Use instead
    ```python
    (scaled,) = torch.autograd.grad(scaler.scale(score.sum()), x, create_graph=True)
    grads = scaled / scaler.get_scale()
    penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [Automatic Mixed Precision examples: gradient penalty](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-penalty)
    """

    code = "TP320"
    name = "penalty-from-scaled-gradients"
    severity = Severity.WARNING


@register
class BinaryCrossEntropyUnderAutocast(Rule):
    """## What it does
    Flags `F.binary_cross_entropy` or an `nn.BCELoss` called inside a CUDA autocast block,
    or in a function or module (a loss's `forward`) that such a block calls.

    ## Why is this bad?
    CUDA autocast refuses both: "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss
    are unsafe to autocast" (their float16 gradients overflow). The CPU path, where autocast is
    off or on the CPU, runs; the first GPU step stops.

    ## Example
    ```python
    probs = torch.sigmoid(model(x))
    with torch.autocast("cuda", dtype=torch.float16):
        loss = F.binary_cross_entropy(probs, target)
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        loss = F.binary_cross_entropy_with_logits(model(x), target)  # drop the sigmoid
    ```

    ## Fix safety
    No automatic fix: the sigmoid before it has to go too.
    """

    code = "TP322"
    name = "binary-cross-entropy-under-autocast"
    severity = Severity.ERROR


@register
class UnscaleEveryMicroBatch(Rule):
    """## What it does
    Flags `scaler.unscale_(optimizer)` run at every micro-batch of a gradient accumulation
    whose `scaler.step()` and `scaler.update()` run only every N micro-batches.

    ## Why is this bad?
    A second `unscale_` before `update()` raises "unscale_() has already been called on this
    optimizer since the last update()": the program stops at the second micro-batch on the
    GPU. On the CPU the scaler is disabled and it runs (`torchport run` reports it as TP354).

    ## Example
    ```python
    for i, (x, y) in enumerate(loader):
        scaler.scale(loss_fn(model(x), y) / accum).backward()
        scaler.unscale_(optimizer)
        clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
    ```

    ## Use instead
    ```python
    for i, (x, y) in enumerate(loader):
        scaler.scale(loss_fn(model(x), y) / accum).backward()
        if (i + 1) % accum == 0:
            scaler.unscale_(optimizer)
            clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP323"
    name = "unscale-every-micro-batch"
    severity = Severity.ERROR


@register
class AutocastDeviceString(Rule):
    """## What it does
    Flags `torch.autocast(device_type=...)` given a device rather than a device type:
    `str(device)`, an f-string, or a `torch.device`.

    ## Why is this bad?
    `device_type` takes a device type, `"cuda"` or `"cpu"`. On the CPU `str(device)` is
    `"cpu"` and the program runs; on a GPU it is `"cuda:0"`, which the torch releases of
    2024-2025 refuse ("User specified an unsupported autocast device_type 'cuda:0'", reported
    with torch 2.4 and 2.5); torch 2.13 accepts it. `device.type` works with every release.

    ## Example
    ```python
    with torch.autocast(device_type=str(self.device), dtype=torch.float16):
        loss = model(x)
    ```

    ## Use instead
    ```python
    with torch.autocast(device_type=self.device.type, dtype=torch.float16):
        loss = model(x)
    ```

    ## Fix safety
    Safe: `device.type` is the type `str(device)` starts with.
    """

    code = "TP324"
    name = "autocast-device-string"
    severity = Severity.WARNING


@register
class GradScalerPerStep(Rule):
    """## What it does
    Flags a `GradScaler` made in code that runs once per training step (a trainer's
    `optimize_parameters`, the body of the batch loop) and stepped there: each step gets a
    new scaler.

    ## Why is this bad?
    A scaler learns its loss scale across steps: it starts at 65536, halves it after a step
    whose gradients overflowed (and skips that step), and grows it again after a run of clean
    steps. A new scaler per step starts from 65536 every time, so a model whose gradients
    overflow at that scale skips every step and never trains, and the scale never adapts.
    The CPU path usually builds it disabled, so nothing shows until the GPU run.

    ## Example
    ```python
    def train_step(self, batch):
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = self.model(batch)
        scaler.scale(loss).backward()
        scaler.step(self.optimizer)
        scaler.update()
    ```

    ## Use instead
    ```python
    def __init__(self, model, optimizer):
        ...
        self.scaler = torch.amp.GradScaler("cuda")  # once, kept across steps

    def train_step(self, batch):
        ...
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
    ```

    ## References
    - [PyTorch AMP examples: one scaler for the whole run](https://pytorch.org/docs/stable/notes/amp_examples.html)
    """

    code = "TP326"
    name = "grad-scaler-per-step"
    severity = Severity.ERROR


# --- runtime rules (torchport run): TP350-TP399 ------------------------------------------


@register
class UnscaleTwiceBeforeUpdate(Rule):
    """## What it does
    Reports, at run time, `scaler.unscale_(optimizer)` called a second time for the same
    optimizer with no `scaler.update()` since the first: once per micro-batch of a gradient
    accumulation, or after an iteration that skipped its update.

    ## Why is this bad?
    torch raises "unscale_() has already been called on this optimizer since the last
    update()". The program runs on the CPU, where the scaler is disabled, and fails on the
    first GPU run.

    ## Example
    ```python
    for i, (x, y) in enumerate(loader):
        scaler.scale(loss_fn(model(x), y) / accum).backward()
        scaler.unscale_(optimizer)  # every micro-batch
        clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
    ```

    ## Use instead
    ```python
    for i, (x, y) in enumerate(loader):
        scaler.scale(loss_fn(model(x), y) / accum).backward()
        if (i + 1) % accum == 0:
            scaler.unscale_(optimizer)  # once, just before the step
            clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP354"
    name = "unscale-twice-before-update"
    severity = Severity.ERROR


@register
class ScalerUpdatedBetweenSteps(Rule):
    """## What it does
    Reports, at run time, `scaler.step(optimizer)` for gradients of a backward pass after
    `scaler.update()` already ran for that pass: one scaler shared by several optimizers and
    updated after each of their steps (an optimizer wrapper whose `step()` also updates the
    scaler).

    ## Why is this bad?
    `update()` changes the loss scale (halves it after an overflow, grows it after a run of
    clean steps). The next optimizer then unscales gradients made with the old scale by the
    new one: they come out twice or half as large, and an overflow seen by the first
    optimizer is forgotten by the second. The CPU path runs a disabled scaler, where nothing
    shows.

    ## Example
    ```python
    scaler.scale(loss).backward()
    for opt in (opt_encoder, opt_decoder):
        scaler.step(opt)
        scaler.update()
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    for opt in (opt_encoder, opt_decoder):
        scaler.step(opt)
    scaler.update()  # once per iteration, after every optimizer stepped
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [PyTorch AMP examples: working with multiple models, losses, and optimizers](https://pytorch.org/docs/stable/notes/amp_examples.html)
    """

    code = "TP357"
    name = "scaler-updated-between-steps"
    severity = Severity.ERROR


@register
class GradScalerMadeAfterRestore(Rule):
    """## What it does
    Flags `self.scaler = GradScaler(...)` in the method that runs the training loop (it steps
    the scaler there), in a class whose other method restores that scaler
    (`self.scaler.load_state_dict(...)`).

    ## Why is this bad?
    A resumed run restores the checkpoint first and trains next: the training method then
    makes a new scaler, and the restored one is dropped (or was never there to restore into).
    The loss scale starts over at 65536, and the first steps after the resume may be skipped
    while it falls back to where it was.

    ## Example
    ```python
    def load_checkpoint(self, ckpt):
        if self.scaler is not None:
            self.scaler.load_state_dict(ckpt["scaler"])

    def fit(self, batches):
        self.scaler = torch.amp.GradScaler("cuda")
        for x, y in batches:
            ...
    ```

    ## Use instead
    ```python
    def __init__(self, ...):
        self.scaler = torch.amp.GradScaler("cuda")
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP327"
    name = "grad-scaler-made-after-restore"
    severity = Severity.WARNING
