"""TP308 beyond its golden files: bfloat16 weights without bfloat16 autocast, the scaler and
the cast as related locations, and scalers that are off for bfloat16."""

from __future__ import annotations

import textwrap

from torchport.analyze import engine
from torchport.findings import Finding

MODEL = textwrap.dedent(
    """\
    import torch
    from torch import nn

    model = nn.Linear(8, 2).cuda()
    model = model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled={enabled})
    """
)
AUTOCAST = "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x).sum()\n"


def _tp308(source: str) -> list[Finding]:
    return engine.analyze(source, "t.py", lambda code: code == "TP308")


def test_bfloat16_weights_with_a_scaler_are_reported_at_the_cast() -> None:
    [finding] = _tp308(MODEL.format(enabled="use_amp"))
    assert finding.location is not None and finding.location.line == 5
    assert [r.line for r in finding.related] == [7]


def test_bfloat16_autocast_points_at_the_scaler_and_the_cast_of_the_model() -> None:
    [finding] = _tp308(MODEL.format(enabled="True") + AUTOCAST)
    assert finding.location is not None and finding.location.line == 8
    assert [r.line for r in finding.related] == [7, 5]


def test_a_scaler_enabled_only_for_float16_is_not_reported() -> None:
    for enabled in ("False", 'dtype == "float16"', "args.fp16"):
        assert _tp308(MODEL.format(enabled=enabled) + AUTOCAST) == []
