"""Rules of one family; see registry.FAMILIES. Collectives that not every process reaches."""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register

__all__: list[str] = []


# --- static rules (analyze): TP416 -------------------------------------------------------


@register
class CollectiveOnOneRank(Rule):
    """## What it does
    Flags a collective (`dist.barrier()`, `all_reduce`, `broadcast`...) that only the main
    process reaches: called under `if rank == 0:` (or `local_rank in [-1, 0]`,
    `is_main_process()`), directly or in a function of the same file called there.

    ## Why is this bad?
    A collective returns only when every process of the group has called it. The others
    never do, so the main process waits forever (NCCL times out after 10 to 30 minutes, or
    the job hangs). The classic case: a data-caching helper that ends with the "main process
    releases the others" barrier, called again for evaluation on rank 0 only.

    ## Example
    ```python
    def load_dataset(args):
        ...
        if args.local_rank == 0:
            dist.barrier()  # the others wait here at the first call

    if args.local_rank in [-1, 0]:
        evaluate(model, load_dataset(args))  # rank 0 alone: hangs
    ```

    ## Use instead
    Call the helper on every process (and evaluate on rank 0 afterwards), or give it a flag
    that skips the barrier when only one process runs it.

    ## Fix safety
    No automatic fix: which processes should run the block is the program's choice.
    """

    code = "TP416"
    name = "collective-on-one-rank"
    severity = Severity.WARNING
