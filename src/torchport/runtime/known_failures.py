"""Errors torch raises on a GPU whose cause is a porting mistake: each also becomes a finding.

The watch reports every failure with its line (failure.py); the few here name their mistake
and its fix, so that the report (and a CI gate on findings) says what to change.
"""

from __future__ import annotations

from torchport.findings import Finding, Fix
from torchport.rules.distributed import WrappedBeforeMoved
from torchport.runtime.sites import Site

_KNOWN = (
    (
        "device_ids and output_device arguments only work with",
        "DistributedDataParallel was given device_ids for a module still on the CPU",
        "move the module to its GPU first: DDP(model.to(device), device_ids=[local_rank])",
    ),
    (
        "module must have its parameters and buffers on device",
        "DataParallel runs a module that is not on its first GPU",
        "move the model to the GPU before wrapping it: nn.DataParallel(model.to(device))",
    ),
)


def finding_for(exc: BaseException, site: Site | None) -> Finding | None:
    """The finding the program's final error stands for, when it is one of the known ones."""
    text = str(exc)
    for words, what, fix in _KNOWN:
        if words in text and site is not None:
            return WrappedBeforeMoved.finding(
                f"{what}: the wrapper reads where the module is when it is made",
                site.location(),
                Fix(fix),
            )
    return None
