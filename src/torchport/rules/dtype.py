"""Rules of one family; see registry.FAMILIES."""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register

__all__: list[str] = []


# --- static rules (analyze): TP300-TP349 -------------------------------------------------


@register
class NumpyFloat64ToTensor(Rule):
    """## What it does
    Flags NumPy float64 data (`np.random.rand`, `np.zeros`, a float `np.array`,
    `rng.standard_normal`...) turned into a tensor without a float32 cast.

    ## Why is this bad?
    NumPy defaults to float64, and `torch.from_numpy`/`torch.tensor` keep it: the model then
    fails with "expected scalar type Float but found Double", or everything downstream runs in
    float64, which is many times slower on GPUs and doubles every copy.

    ## Example
    ```python
    x = torch.from_numpy(np.random.rand(64, 20))
    ```

    ## Use instead
    ```python
    x = torch.from_numpy(np.random.rand(64, 20)).float()
    ```

    ## Fix safety
    Unsafe: the values are rounded to float32.
    """

    code = "TP301"
    name = "numpy-float64-to-tensor"
    severity = Severity.WARNING


@register
class Float64OnAccelerator(Rule):
    """## What it does
    Flags `.double()` and `dtype=torch.float64` in a file that runs on an accelerator; at run
    time, each float64 tensor moved to the device (as info below 8192 elements: a small table
    such as a diffusion schedule costs little).

    ## Why is this bad?
    Consumer and most data-centre GPUs run float64 at 1/32 to 1/64 of float32 speed, and MPS
    does not support it at all.

    ## Example
    ```python
    x = x.double().to(device)
    ```

    ## Use instead
    ```python
    x = x.float().to(device)
    ```

    ## Fix safety
    No automatic fix: only you know whether the precision is needed.
    """

    code = "TP302"
    name = "float64-on-accelerator"
    severity = Severity.WARNING


@register
class IntegerInputToFloatLayer(Rule):
    """## What it does
    Flags an integer tensor (`torch.randint`, `.long()`, `dtype=torch.int64`) passed to a
    float layer such as `nn.Linear` or `nn.Conv2d`.

    ## Why is this bad?
    Linear and convolution layers need floating-point inputs: the call fails with
    "mat1 and mat2 must have the same dtype" (or "expected scalar type Float but found Long").

    ## Example
    ```python
    out = fc(torch.randint(0, 10, (8, 4)))
    ```

    ## Use instead
    ```python
    out = fc(torch.randint(0, 10, (8, 4)).float())
    ```

    ## Fix safety
    Unsafe: adds `.float()` to the argument.
    """

    code = "TP303"
    name = "integer-input-to-float-layer"
    severity = Severity.ERROR


@register
class LossTargetWrongDtype(Rule):
    """## What it does
    Flags targets of the wrong dtype: a tensor cast to float for `CrossEntropyLoss`/`NLLLoss`
    (class indices must be int64), or an integer tensor for `BCELoss`/`BCEWithLogitsLoss`
    (targets must be float).

    ## Why is this bad?
    The loss raises "expected scalar type Long but found Float" or "result type Float can't be
    cast to the desired output type Long", often only on the GPU code path.

    ## Example
    ```python
    loss = nn.BCEWithLogitsLoss()(logits, y.long())
    ```

    ## Use instead
    ```python
    loss = nn.BCEWithLogitsLoss()(logits, y.float())
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP304"
    name = "loss-target-wrong-dtype"
    severity = Severity.ERROR


@register
class DeprecatedAmpApi(Rule):
    """## What it does
    Flags `torch.cuda.amp.autocast`, `torch.cuda.amp.GradScaler`,
    `torch.cuda.amp.custom_fwd/custom_bwd` and `torch.cpu.amp.autocast`.

    ## Why is this bad?
    They are deprecated (a FutureWarning at every call) in favour of the device-generic
    `torch.amp` API, which also works on other accelerators.

    ## Example
    ```python
    with torch.cuda.amp.autocast():
        out = model(x)
    ```

    ## Use instead
    ```python
    with torch.amp.autocast("cuda"):
        out = model(x)
    ```

    ## Fix safety
    Safe: `torch.amp.autocast("cuda", ...)` is what the deprecated function calls.

    ## References
    - [Automatic Mixed Precision](https://pytorch.org/docs/stable/amp.html)
    """

    code = "TP305"
    name = "deprecated-amp-api"
    severity = Severity.WARNING


@register
class HalfModelWithGradScaler(Rule):
    """## What it does
    Flags a model converted with `.half()` in code that trains it with a `GradScaler`.

    ## Why is this bad?
    The scaler refuses float16 gradients ("Attempting to unscale FP16 gradients"), and pure
    float16 weights lose small updates. AMP keeps float32 weights and casts per operation.

    ## Example
    ```python
    model = Net().half().to(device)
    scaler = torch.amp.GradScaler("cuda")
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    scaler = torch.amp.GradScaler("cuda")
    with torch.amp.autocast("cuda"):
        ...
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP306"
    name = "half-model-with-grad-scaler"
    severity = Severity.ERROR


@register
class BackwardInsideAutocast(Rule):
    """## What it does
    Flags `backward()` called inside a `with autocast(...)` block.

    ## Why is this bad?
    Backward ops run in the dtype their forward ops chose; running backward under autocast is
    not recommended and can change its precision choices.

    ## Example
    ```python
    with torch.autocast("cuda"):
        loss = criterion(model(x), y)
        loss.backward()
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda"):
        loss = criterion(model(x), y)
    loss.backward()
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP307"
    name = "backward-inside-autocast"
    severity = Severity.WARNING


@register
class GradScalerWithBfloat16(Rule):
    """## What it does
    Flags an enabled `GradScaler` used together with `autocast(dtype=torch.bfloat16)`, or,
    without such autocast, with a trained model cast to bfloat16 (`model.to(torch.bfloat16)`,
    `model.bfloat16()`). A scaler enabled only for float16 (`enabled=(dtype == "float16")`)
    is not flagged.

    ## Why is this bad?
    bfloat16 has float32's exponent range, so gradients do not underflow and loss scaling is
    pointless overhead (and a source of skipped steps). With bfloat16 weights the gradients
    are bfloat16 too, and unscaling them fails on CUDA
    (`"_amp_foreach_non_finite_check_and_unscale_cuda" not implemented for 'BFloat16'`).

    ## Example
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        ...
    ```

    ## Use instead
    Drop the scaler and call `loss.backward()` and `optimizer.step()` directly.

    ## Fix safety
    No automatic fix.

    ## References
    - [pytorch/pytorch#127176: unscale not implemented for 'BFloat16'](https://github.com/pytorch/pytorch/issues/127176)
    """

    code = "TP308"
    name = "grad-scaler-with-bfloat16"
    severity = Severity.WARNING


@register
class OptimizerStepBypassesScaler(Rule):
    """## What it does
    Flags `optimizer.step()` called directly in a function that scales the loss with a
    `GradScaler`.

    ## Why is this bad?
    The gradients are still multiplied by the scale factor (thousands), and steps with inf or
    NaN gradients are not skipped: training diverges.

    ## Example
    ```python
    scaler.scale(loss).backward()
    optimizer.step()
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    Unsafe: replaces the call with `scaler.step(optimizer)`.
    """

    code = "TP309"
    name = "optimizer-step-bypasses-scaler"
    severity = Severity.ERROR


@register
class GradScalerWithoutUpdate(Rule):
    """## What it does
    Flags `scaler.step(optimizer)` in a function that never calls `scaler.update()`, and a
    `continue` or `return` that leaves the step after `scaler.unscale_(optimizer)` and before
    `scaler.update()` (a step skipped when the gradient norm is too large).

    ## Why is this bad?
    The scale factor never adapts: after one overflow every later step is skipped, or the
    scale stays too small and gradients underflow. After a skipped update the next
    `unscale_` raises: "unscale_() has already been called on this optimizer since the last
    update()". Skipping after the scaled backward but before `unscale_` (gradient
    accumulation) is fine.

    ## Example
    ```python
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    Unsafe: inserts `scaler.update()` right after the step.
    """

    code = "TP310"
    name = "grad-scaler-without-update"
    severity = Severity.ERROR


@register
class NoDeviceKernelForDtype(Rule):
    """## What it does
    Flags an op that the CPU computes for the dtype it is given but CUDA has no kernel for:
    a matrix product of two integer tensors (`one_hot(t).T @ one_hot(p)`, `counts.t() @
    counts`), a bilinear or bicubic `F.interpolate` of a uint8 image, and an average or 2-D max
    pooling of an integer tensor, in a file that runs on an accelerator. Also QR
    (`torch.linalg.qr`, and `torch.pca_lowrank` / `svd_lowrank`, which run it) reached from a
    CUDA autocast region: autocast hands it float16, and CUDA's QR takes float32 and float64
    only (pytorch/pytorch#99710). Under `run --simulate`, these ops fail as on a GPU.

    ## Why is this bad?
    The program runs on the CPU and stops on the GPU: "addmm_cuda" not implemented for
    'Long', "upsample_bilinear2d_out_frame" not implemented for 'Byte'.

    ## Example
    ```python
    confusion += F.one_hot(target, n).T @ F.one_hot(pred, n)
    ```

    ## Use instead
    ```python
    confusion += (F.one_hot(target, n).T.float() @ F.one_hot(pred, n).float()).long()
    # or count pairs: confusion.view(-1).index_add_(0, target * n + pred, ones)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP321"
    name = "no-device-kernel-for-dtype"
    severity = Severity.ERROR


@register
class Float32InputToHalfModel(Rule):
    """## What it does
    Flags a call of a model that the file casts to float16 or bfloat16 (`model.half()`,
    `model.to(dtype=torch.float16)`) with an input that nothing casts to that dtype: a batch, or
    a tensor made float32 with `.float()`, in a file without autocast.

    ## Why is this bad?
    The half-precision path, usually taken only on the GPU (`if device.type == "cuda":
    model.half()`), fails at the first layer: "Input type (torch.cuda.FloatTensor) and weight
    type (torch.cuda.HalfTensor) should be the same".

    ## Example
    ```python
    if device.type == "cuda":
        model.half()
    img = torch.from_numpy(frame).to(device).float() / 255.0
    pred = model(img)
    ```

    ## Use instead
    ```python
    img = img.to(next(model.parameters()).dtype)  # or: img.half() where the model is half
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP325"
    name = "float32-input-to-half-model"
    severity = Severity.WARNING


# --- runtime rules (torchport run): TP350-TP399 ------------------------------------------


@register
class ImplicitFloat64Promotion(Rule):
    """## What it does
    Flags, at run time, ops that combine a float32 tensor with a float64 tensor, so that the
    result is silently promoted to float64.

    ## Why is this bad?
    float64 takes twice the memory and, on most GPUs, runs 30 to 60 times slower than float32;
    once one float64 tensor enters the computation, everything downstream of it becomes
    float64 as well.

    ## Example
    ```python
    weights = torch.from_numpy(np.ones(10))  # float64
    loss = (per_sample * weights).mean()
    ```

    ## Use instead
    ```python
    weights = torch.from_numpy(np.ones(10, dtype=np.float32))
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP350"
    name = "implicit-float64-promotion"
    severity = Severity.WARNING


@register
class NonFiniteOpOutput(Rule):
    """## What it does
    With `torchport run --check-finite`, reports the first op whose output holds inf or NaN
    although its inputs were finite, with the module that ran it. Under `--simulate`, without
    the option, the first float16 result that overflows (inf or NaN where the same op in
    float32 stays finite) is reported.

    ## Why is this bad?
    In half precision an overflow (above 65504 in float16) turns into inf and then NaN; the loss
    shows NaN many ops later, far from the op that caused it.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        scores = q @ k.transpose(-1, -2)  # overflows float16
    ```

    ## Use instead
    Scale before the product, compute that op in float32, or use bfloat16.

    ## Fix safety
    No automatic fix.
    """

    code = "TP351"
    name = "non-finite-op-output"
    severity = Severity.ERROR


@register
class FloatIndicesToEmbedding(Rule):
    """## What it does
    Reports, at run time, a floating-point tensor passed as indices to `nn.Embedding` or
    `nn.EmbeddingBag`.

    ## Why is this bad?
    Embedding looks rows up by integer index: torch stops with "Expected tensor for argument #1
    'indices' to have one of the following scalar types: Long, Int". Token ids usually become
    float on the way: built with `torch.floor`, read from a float NumPy array, or cast with the
    features by a `.float()` on the whole batch.

    ## Example
    ```python
    ids = torch.floor(torch.rand(4, 5) * vocab)
    out = embed(ids)
    ```

    ## Use instead
    ```python
    ids = torch.randint(0, vocab, (4, 5))
    out = embed(ids)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP352"
    name = "float-indices-to-embedding"
    severity = Severity.ERROR


@register
class DtypeErrorAtRunTime(Rule):
    """## What it does
    Reports, at run time, an op that failed because of its dtypes: tensors of different
    dtypes where one is needed (float32 input to float16 weights, a Half and a Float operand of
    one matmul), a value that does not fit the tensor's dtype (`masked_fill(mask, -1e9)` on a
    float16 tensor), a kernel the device lacks for the dtype (integer matmul, bilinear resize of
    uint8 images on CUDA), or an op CUDA autocast refuses (`BCELoss` on float16
    probabilities); `--simulate cuda` reproduces the last two on the CPU.

    ## Why is this bad?
    Such code often runs on the CPU in float32 and fails only on the GPU path: where the model
    is cast with `.half()` when CUDA is available, or where CUDA has no kernel the CPU has.

    ## Example
    ```python
    if device.type == "cuda":
        model = model.half()
    scores = scores.masked_fill(pad, -1e9)  # -1e9 does not fit float16
    ```

    ## Use instead
    ```python
    scores = scores.masked_fill(pad, torch.finfo(scores.dtype).min)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP353"
    name = "dtype-error-at-run-time"
    severity = Severity.ERROR


@register
class IntegersRoundedInLowPrecision(Rule):
    """## What it does
    Reports, at run time, whole numbers that a cast to bfloat16 or float16 changes (timesteps,
    positions, counts: `t.to(dtype=torch.bfloat16)` with t = 998), and a `torch.arange` made
    in one of those dtypes past the whole numbers it holds exactly (256 in bfloat16, 2048 in
    float16).

    ## Why is this bad?
    bfloat16 keeps 8 significant bits: 998 becomes 1000, and positions 257 and 258 are the
    same number. A diffusion model then embeds the wrong timestep and a rotary cache repeats
    rows, silently, only on the GPU path where the model runs in half precision.

    ## Example
    ```python
    timestep = t.expand(batch).to(device=device, dtype=model.dtype)  # bfloat16 on the GPU
    positions = torch.arange(seq_len, device=device, dtype=inv_freq.dtype)
    ```

    ## Use instead
    ```python
    timestep = t.expand(batch).to(device)  # embed in float32, cast the embedding
    positions = torch.arange(seq_len, device=device, dtype=torch.float32)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP355"
    name = "integers-rounded-in-low-precision"
    severity = Severity.WARNING


@register
class Float16OverflowingConstant(Rule):
    """## What it does
    Flags a constant beyond float16's range (±65504), such as `-1e9` or
    `torch.finfo(torch.float32).min`, written into a tensor with `masked_fill`,
    `masked_fill_` or `fill_`, or picked by `torch.where`, in a file that computes in float16
    (`.half()`, `torch.float16`, or float16 autocast).
    `torchport run` also reports a number beyond that range written into a float16 tensor by
    an indexed write (`logits[i, eos] = float(2**30)`), which torch stores as inf silently.

    ## Why is this bad?
    Attention masks are often filled with `-1e9`. In float32 that is fine; once the scores
    are float16 (a `.half()` model on the GPU, or under autocast) torch stops with "value cannot
    be converted to type at::Half without overflow" — on the GPU path only.

    ## Example
    ```python
    scores = scores.masked_fill(pad, -1e9)
    ```

    ## Use instead
    ```python
    scores = scores.masked_fill(pad, torch.finfo(scores.dtype).min)
    ```

    ## Fix safety
    Unsafe: the lowest value of the tensor's own dtype replaces the constant, which changes
    the numbers in float32 (from -1e9 to about -3.4e38); a later sum with it can overflow.

    ## References
    - [NVIDIA/apex#1052](https://github.com/NVIDIA/apex/issues/1052)
    - [torch.finfo](https://pytorch.org/docs/stable/type_info.html#torch.finfo)
    """

    code = "TP317"
    name = "float16-overflowing-constant"
    severity = Severity.WARNING


@register
class Float16VanishingEpsilon(Rule):
    """## What it does
    Points at a small constant added to guard a division or a logarithm (`x + 1e-8`,
    `torch.log(p + 1e-15)`, or `norm + self.eps` where `__init__` has `eps=1e-10`) that
    float16 cannot hold, in a file that computes in float16 (`.half()`, `torch.float16`, or
    float16 autocast).
    Also `F.normalize` and `F.cosine_similarity` left with their default eps (1e-12, 1e-8)
    in a file that casts to float16 (under autocast their norms run in float32).

    ## Why is this bad?
    The smallest positive float16 is about 6e-8: `1e-8` and `1e-15` round to 0 when the other
    operand is float16, so the guard guards nothing and a zero turns into inf or NaN — only on
    the GPU path, where the tensors are float16.

    A suggestion (info): whether the operand is float16 at that line is not evident from the
    code alone.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        p = torch.sigmoid(model(x))
        loss = -torch.log(p + 1e-15).mean()
    ```

    ## Use instead
    ```python
    loss = -torch.log(p.float() + 1e-15).mean()  # or an eps float16 holds, such as 1e-4
    ```

    ## Fix safety
    No automatic fix: the right eps depends on the values.

    ## References
    - [torch.finfo (float16: tiny 6.1e-05, smallest subnormal about 6e-08)](https://pytorch.org/docs/stable/type_info.html#torch.finfo)
    """

    code = "TP318"
    name = "float16-vanishing-epsilon"
    severity = Severity.INFO


@register
class Tf32BeforeLinearAlgebra(Rule):
    """## What it does
    Flags TF32 turned on for float32 matrix products (`torch.backends.cuda.matmul.allow_tf32 =
    True`, `torch.set_float32_matmul_precision("high")` or `"medium"`) in a file that also
    runs linear algebra on the results: `torch.linalg.svd`, `det`, `solve`, `inv`, `lstsq`,
    `eigh`, `cholesky`, `qr` and the like.

    ## Why is this bad?
    On an Ampere or newer GPU, TF32 keeps 10 bits of the mantissa in matrix products
    (about three decimal digits). That is fine for training a network, but a covariance
    or a rotation handed to an SVD, a determinant or a solver comes out visibly wrong: a
    point-cloud registration or a pose estimate that was exact on the CPU is off by
    centimetres on the GPU. Older GPUs and the CPU never use TF32, so it shows on some machines
    only.

    ## Example
    ```python
    torch.backends.cuda.matmul.allow_tf32 = True
    u, _, vt = torch.linalg.svd(src.T @ dst)
    ```

    ## Use instead
    ```python
    torch.backends.cuda.matmul.allow_tf32 = True  # for the network
    # float64 products never use TF32 (or set the flag to False around the geometry)
    u, _, vt = torch.linalg.svd(src.double().T @ dst.double())
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - [TF32 on Ampere](https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices)
    """

    code = "TP328"
    name = "tf32-before-linear-algebra"
    severity = Severity.WARNING
