"""Rules of one family; see registry.FAMILIES. Each process of a multi-GPU job and its GPU."""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register

__all__: list[str] = []


# --- runtime rules (run): TP418 ------------------------------------------------------------


@register
class DefaultDeviceWithoutRank(Rule):
    """## What it does
    Reports, at run time, `torch.set_default_device("cuda")` (no index) in a process of a
    distributed job (a process group is initialised) that never chose its GPU with
    `torch.cuda.set_device(local_rank)`.

    ## Why is this bad?
    `"cuda"` without an index is the *current* device, and a process that never set it is on
    GPU 0: under `torchrun` every rank builds its model on GPU 0, which runs out of memory or
    makes NCCL refuse two ranks on one GPU. With one process it happens to work.

    ## Example
    ```python
    dist.init_process_group("nccl")
    torch.set_default_device("cuda")
    model = Transformer(args)
    ```

    ## Use instead
    ```python
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    torch.set_default_device(f"cuda:{local_rank}")
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "TP418"
    name = "default-device-without-rank"
    severity = Severity.WARNING
