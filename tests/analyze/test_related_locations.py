"""A finding about a CPU tensor meeting one on the device points at where the CPU one was made.

Reported where the two meet, the finding also carries that line as a related location (JSON
``related``, SARIF ``relatedLocations``), so an editor or a reviewer can jump to the fix.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from torchport.cli import main

HELPER = textwrap.dedent(
    """\
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    def jitter(n):
        return torch.rand(n, 1)


    def step(x):
        return x * jitter(x.shape[0])


    step(torch.randn(4, 3, device=device))
    """
)
LOCAL = textwrap.dedent(
    """\
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(4, 3).to(device)
    scale = torch.ones(3)
    y = x * scale
    """
)


def _findings(path: Path, capsys: pytest.CaptureFixture[str], *command: str) -> list[Any]:
    main([*command, "--output-format", "json", str(path)])
    return [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "TP150"]


def test_check_names_the_helper_line_that_made_the_cpu_tensor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.py").write_text(HELPER, encoding="utf-8")
    [finding] = _findings(tmp_path / "t.py", capsys, "check")
    assert finding["line"] == 11
    assert [(r["path"], r["line"]) for r in finding["related"]] == [(str(tmp_path / "t.py"), 7)]


def test_check_names_the_assignment_of_a_local_cpu_operand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.py").write_text(LOCAL, encoding="utf-8")
    [finding] = _findings(tmp_path / "t.py", capsys, "check")
    assert (finding["line"], [r["line"] for r in finding["related"]]) == (6, [5])


def test_run_names_where_the_cpu_tensor_was_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "t.py"
    script.write_text(HELPER, encoding="utf-8")
    report = tmp_path / "report.json"
    main(
        [
            "run",
            "--simulate",
            "cuda",
            "--output-format",
            "json",
            "--report",
            str(report),
            str(script),
        ]
    )
    capsys.readouterr()
    data = json.loads(report.read_text(encoding="utf-8"))
    [finding] = [f for f in data["findings"] if f["code"] == "TP150"]
    assert finding["line"] == 11
    assert [Path(r["path"]).name for r in finding["related"]] == ["t.py"]
    assert [r["line"] for r in finding["related"]] == [7]


def test_sarif_carries_the_related_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.py").write_text(HELPER, encoding="utf-8")
    main(["check", "--output-format", "sarif", str(tmp_path / "t.py")])
    [result] = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    [related] = result["relatedLocations"]
    assert related["physicalLocation"]["region"]["startLine"] == 7


def test_a_sampler_without_set_epoch_points_at_the_epoch_loop() -> None:
    from torchport.analyze.engine import analyze

    source = textwrap.dedent(
        """\
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler


        def build(ds):
            sampler = DistributedSampler(ds, shuffle=True)
            return DataLoader(ds, sampler=sampler)


        def main(ds, train):
            loader = build(ds)
            for epoch in range(10):
                train(loader)
        """
    )
    [found] = [f for f in analyze(source, "t.py", lambda c: True) if f.code == "TP403"]
    assert found.location is not None and found.location.line == 6
    assert [r.line for r in found.related] == [12]


def test_a_bce_loss_under_autocast_points_at_where_the_loss_was_made() -> None:
    from torchport.analyze.engine import analyze

    source = textwrap.dedent(
        """\
        import torch
        from torch import nn


        class Trainer:
            def __init__(self, model):
                self.model = model.cuda()
                self.loss_fn = nn.BCELoss()

            def step(self, x, y):
                with torch.autocast("cuda"):
                    loss = self.loss_fn(torch.sigmoid(self.model(x)), y)
                return loss
        """
    )
    [found] = [f for f in analyze(source, "t.py", lambda c: True) if f.code == "TP322"]
    assert found.location is not None and found.location.line == 12
    assert [r.line for r in found.related] == [8]
