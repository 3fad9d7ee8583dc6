"""Correct programs get no warning or error from `run`; a sync torch makes for the user is no
finding unless the user has a cheaper way, and then the finding names it."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from torchport.findings import Severity
from torchport.runtime import watch
from torchport.runtime.checks import starvation_evidence
from torchport.runtime.record import LoaderStats


def _alarms(w: watch) -> list[str]:
    return [f"{f.code} {f.message}" for f in w.findings if f.severity >= Severity.WARNING]


def _amp_loop(optimizer_class: type[torch.optim.Optimizer], steps: int = 8) -> watch:
    with watch("cuda") as w:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to("cuda")
        opt = optimizer_class(model.parameters(), lr=0.01)
        scaler = torch.amp.GradScaler("cuda")
        x, y = torch.randn(32, 16, device="cuda"), torch.randint(0, 4, (32,), device="cuda")
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            with torch.amp.autocast(device_type="cuda", dtype=torch.float16):
                loss = nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
    return w


def test_a_correct_grad_scaler_loop_gets_no_warning_only_the_fused_suggestion() -> None:
    w = _amp_loop(torch.optim.SGD)
    assert _alarms(w) == []
    [tip] = w.findings
    assert (tip.code, tip.severity) == ("TP204", Severity.INFO)
    assert "inside GradScaler.step" in tip.message
    assert tip.fix is not None and "SGD with fused=True" in tip.fix.title
    assert tip.location is not None and tip.location.path == __file__


class _PlainSGD(torch.optim.Optimizer):
    """An optimizer without a fused step: GradScaler's .item() is then unavoidable."""

    def __init__(self, params: object, lr: float) -> None:
        super().__init__(params, {"lr": lr})  # type: ignore[arg-type]

    @torch.no_grad()
    def step(self, closure: object = None) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])


def test_grad_scalers_sync_with_an_optimizer_that_cannot_fuse_is_no_finding() -> None:
    w = _amp_loop(_PlainSGD)
    assert w.findings == []
    [row] = [r for r in w.report().facts["syncs"] if r["inside"] == "GradScaler.step"]
    assert row["in_loop"]  # still in the inventory: it happens, it just is not the user's


def test_clip_grad_norm_makes_no_device_to_host_copy_on_the_simulated_gpu() -> None:
    w = _amp_loop(torch.optim.SGD)
    assert not [
        r for r in w.report().facts.get("transfers", []) if r["direction"] != "host->device"
    ]


def _resume(map_location: str) -> watch:
    with watch("cuda") as w:
        torch.manual_seed(0)
        model = nn.Linear(8, 1).to("cuda")
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x = torch.randn(16, 8, device="cuda")
        model(x).sum().backward()
        opt.step()
        buffer = io.BytesIO()
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buffer)
        buffer.seek(0)
        state = torch.load(buffer, map_location=map_location)  # the line the fix is about
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        for _ in range(6):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    return w


def test_adam_resumed_from_a_checkpoint_loaded_onto_the_gpu_is_told_to_load_on_the_cpu() -> None:
    w = _resume("cuda")
    [finding] = w.findings
    assert (finding.code, finding.severity) == ("TP204", Severity.WARNING)
    assert "inside optimizer.step" in finding.message
    assert finding.fix is not None
    assert "step counters are on cuda:0" in finding.fix.title
    assert "load the checkpoint on the CPU" in finding.fix.title
    assert "let optimizer.load_state_dict place the state" in finding.fix.title
    assert "(the state was loaded at" in finding.fix.title


def test_adam_resumed_from_a_checkpoint_loaded_on_the_cpu_gets_nothing() -> None:
    assert _resume("cpu").findings == []


def test_a_torchrun_style_ddp_loop_runs_under_simulation_without_findings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data.distributed import DistributedSampler

    for name, value in {
        "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29400 + os.getpid() % 500),
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    with watch("cuda") as w:
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        try:
            device = torch.device(f"cuda:{local_rank}")
            data = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
            sampler = DistributedSampler(data)
            loader = DataLoader(data, batch_size=16, sampler=sampler, pin_memory=True)
            # BatchNorm: DDP broadcasts its buffers at every forward (C++ calling back ops)
            net = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
            model = DistributedDataParallel(net.to(device), device_ids=[local_rank])
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for inputs, labels in loader:
                    x = inputs.to(device, non_blocking=True)
                    y = labels.to(device, non_blocking=True)
                    opt.zero_grad()
                    nn.functional.cross_entropy(model(x), y).backward()
                    opt.step()
            weight = model.module[0].weight
            assert weight.device == device and weight.grad is not None
            assert weight.grad.device == device
        finally:
            dist.destroy_process_group()
    assert w.findings == []


def _stats(batches: int, wait_s: float, step_s: float) -> LoaderStats:
    stats = LoaderStats()
    for _ in range(batches):
        stats.add_batch(wait_s, step_s)
    return stats


def test_starvation_needs_enough_batches_time_and_a_steady_share() -> None:
    # 13 % waiting, as in the false alarm: too few short steps to say anything.
    assert starvation_evidence(_stats(6, 0.0013, 0.0087)) is not None
    # Enough batches but a tenth of a second of loop: still noise.
    assert starvation_evidence(_stats(40, 0.0005, 0.002)) is not None
    # One slow burst at the start, then no waiting: not steady.
    burst = _stats(8, 0.2, 0.01)
    for _ in range(32):
        burst.add_batch(0.0001, 0.05)
    assert burst.wait_s / (burst.wait_s + burst.step_s) > 0.1
    assert starvation_evidence(burst) is not None
    assert starvation_evidence(_stats(40, 0.02, 0.03)) is None


def test_a_short_loop_that_waits_a_little_gets_no_starvation_finding(tmp_path: Path) -> None:
    import time

    class Slowish(torch.utils.data.Dataset[torch.Tensor]):
        def __len__(self) -> int:
            return 48

        def __getitem__(self, i: int) -> torch.Tensor:
            time.sleep(0.0005)
            return torch.ones(4)

    with watch() as w:
        for batch in DataLoader(Slowish(), batch_size=8):
            time.sleep(0.01)
            batch.sum()
    assert [f for f in w.findings if f.code == "TP250"] == []


def test_a_starvation_finding_says_how_much_evidence_it_rests_on() -> None:
    from runtime_support import SCRIPTS, run_script

    _, w = run_script(SCRIPTS / "bad_starvation.py")
    [finding] = [f for f in w.findings if f.code == "TP250"]
    assert "measured over 29 batches and" in finding.message
    assert "windows of 8 batches" in finding.message
    assert finding.details["batches"] == 29 and finding.details["seconds"] >= 1.0
