"""Rules of one family; see registry.FAMILIES. Optimizers over half-precision parameters."""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register

__all__: list[str] = []


# --- runtime rules (run), also a static suggestion: TP356 --------------------------------


@register
class Float16OptimizerEpsilon(Rule):
    """## What it does
    Reports, at run time, an optimizer that divides by `sqrt(v) + eps` (Adam, AdamW, NAdam,
    RAdam, Adamax, Adagrad, RMSprop, or any optimizer with an `eps` setting) stepping float16
    parameters with an `eps` that float16 rounds to 0, such as the default `1e-8`. The
    finding is at the line that built the optimizer; its related line is where the parameters
    became float16 (`model.half()`, `.to(dtype=torch.float16)`), when the run saw it.

    `check` suggests it (info) for such an optimizer in a file that casts a model to float16,
    also on its GPU path (`dtype = torch.float16 if cuda else torch.float32`): the code alone
    does not say which parameters it steps.

    ## Why is this bad?
    The optimizer keeps its moments in the parameters' dtype. In float16 the squared
    gradients of small updates underflow to 0, and `eps = 1e-8` is below float16's smallest
    number (about 6e-8), so the denominator is exactly 0: the step divides by zero and the
    weights turn inf or NaN within a few steps. On the CPU path the same program often runs in
    float32 and trains; only the GPU path (`dtype = torch.float16 if cuda`) breaks.

    ## Example
    ```python
    model = Net().to(device, dtype=torch.float16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ```

    ## Use instead
    ```python
    model = Net().to(device)  # float32 weights; compute in float16 under autocast
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    ```
    or keep float16 weights with an eps float16 holds (`eps=1e-4`), or use bfloat16.

    ## Fix safety
    No automatic fix: where the precision should change is the program's choice.

    ## References
    - [torch.finfo (float16: smallest subnormal about 6e-08)](https://pytorch.org/docs/stable/type_info.html#torch.finfo)
    - [Adam (eps is added to the denominator)](https://pytorch.org/docs/stable/generated/torch.optim.Adam.html)
    """

    code = "TP356"
    name = "float16-optimizer-epsilon"
    severity = Severity.WARNING
