"""On a machine with a GPU: the same small program, run on the real device and on the simulated
one, gets the same findings and the same failure. Skipped without CUDA (see tests/conftest.py).

Each program is a case where simulation and a GPU were seen to differ, or where this project
reasoned about CUDA's behaviour without one (CPU index tensors, pinned device tensors, a GPU
checkpoint loaded without map_location, GradScaler and Adam's step counters).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

PROGRAMS = {
    "grad_scaler_loop": """
        import torch
        from torch import nn
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        scaler = torch.amp.GradScaler("cuda")
        x, y = torch.randn(32, 16, device="cuda"), torch.randint(0, 4, (32,), device="cuda")
        for _ in range(8):
            opt.zero_grad(set_to_none=True)
            with torch.amp.autocast(device_type="cuda", dtype=torch.float16):
                loss = nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
    """,
    "adam_resumed_on_the_device": """
        import io
        import torch
        from torch import nn
        model = nn.Linear(8, 1).cuda()
        opt = torch.optim.Adam(model.parameters())
        x = torch.randn(16, 8, device="cuda")
        model(x).sum().backward()
        opt.step()
        buffer = io.BytesIO()
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buffer)
        buffer.seek(0)
        state = torch.load(buffer, map_location="cuda")
        opt.load_state_dict(state["opt"])
        for _ in range(6):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    """,
    "cpu_indices_forward_and_backward": """
        import torch
        table = torch.randn(5, 3, device="cuda", requires_grad=True)
        table[torch.tensor([0, 2, 2])].sum().backward()
        table[torch.tensor([True, False, True, False, True])].sum().backward()
        with torch.no_grad():
            table[torch.tensor([1])] = 0.0
        print(table.grad.device)
    """,
    "device_index_into_cpu_tensor": """
        import torch
        torch.arange(4.0)[torch.tensor([1], device="cuda")]
    """,
    "checkpoint_without_map_location": """
        import io
        import torch
        from torch import nn
        model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).cuda()
        buffer = io.BytesIO()
        torch.save(model, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=False)
        print(loaded[0].weight.device, loaded[1].running_mean.device)
        loaded(torch.randn(5, 3, device="cuda")).sum().backward()
    """,
    "pinned_device_tensor": """
        import torch
        torch.empty(3, device="cuda", pin_memory=True)
    """,
    "zero_dim_accumulator_written_by_a_device_op": """
        import torch
        total = torch.tensor(0.0)
        total += torch.ones(3, device="cuda").sum()
    """,
    "whole_numbers_rounded_by_bfloat16_on_the_device": """
        import torch
        steps = torch.arange(990, 1000, device="cuda").float()
        print(steps.to(torch.bfloat16)[-1].item())
        print(torch.arange(1024, device="cuda", dtype=torch.bfloat16).shape)
        print(torch.arange(64, device="cuda").float().bfloat16().sum().item())
    """,
    "comparison_with_a_cpu_tensor": """
        import torch
        preds, targets = torch.zeros(4, device="cuda"), torch.zeros(4)
        print((preds == targets).sum())
    """,
}


def _run(script: Path, simulate: bool) -> tuple[int, str, dict[str, Any]]:
    report = script.with_suffix(".sim.json" if simulate else ".gpu.json")
    command = [sys.executable, "-m", "torchport", "run", "--output-format", "json"]
    command += ["--report", str(report), *(["--simulate", "cuda"] if simulate else [])]
    done = subprocess.run(
        [*command, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    return done.returncode, done.stdout, json.loads(report.read_text(encoding="utf-8"))


def _summary(report: dict[str, Any]) -> tuple[list[tuple[str, int, str]], str | None]:
    """The findings (code, line, severity) and the failure's exception type."""
    findings = [(f["code"], f["line"], f["severity"]) for f in report["findings"]]
    failed = report["facts"].get("failed")
    return sorted(findings), None if failed is None else failed["error"].split(":")[0]


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_simulated_and_real_gpu_runs_report_the_same(tmp_path: Path, name: str) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(PROGRAMS[name]), encoding="utf-8")
    real_code, real_out, real = _run(script, simulate=False)
    sim_code, sim_out, sim = _run(script, simulate=True)
    assert (sim_code, sim_out) == (real_code, real_out)
    assert _summary(sim) == _summary(real)
