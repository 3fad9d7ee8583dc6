"""Rules of one family; see registry.FAMILIES. Checkpoints and the wrappers they are loaded into."""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register

__all__: list[str] = []


# --- runtime rules (run): TP417 ------------------------------------------------------------


@register
class StateDictPrefixMismatch(Rule):
    """## What it does
    Reports, at run time, a `load_state_dict` that fails because the keys on one side start
    with `module.` and on the other do not: a bare model's checkpoint loaded into a
    `DataParallel`/`DistributedDataParallel` wrapper, or a wrapper's checkpoint loaded into
    the bare model. The finding is at the loading line.

    ## Why is this bad?
    The wrapper holds the network as its `module` attribute, so its state dict's keys carry the
    prefix. Programs that wrap only on the GPU path (`if gpu_mode: model =
    nn.DataParallel(model)`) load their checkpoints on the CPU and fail on the GPU, or the
    other way round. Under `--simulate cuda` the GPU path runs, and with it the failure.

    ## Example
    ```python
    if torch.cuda.is_available():
        model = nn.DataParallel(model)
    model.load_state_dict(torch.load(path))  # saved from the bare model
    ```

    ## Use instead
    ```python
    target = model.module if isinstance(model, nn.DataParallel) else model
    target.load_state_dict(torch.load(path, map_location=device))
    ```
    and save `model.module.state_dict()` from a wrapper (TP410).

    ## Fix safety
    No automatic fix.

    ## References
    - [Unexpected "module." keys in state_dict](https://github.com/pytorch/pytorch/issues/3805)
    """

    code = "TP417"
    name = "state-dict-prefix-mismatch"
    severity = Severity.ERROR
