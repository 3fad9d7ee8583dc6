"""A failure whose cause is a known porting mistake also becomes a finding at the user's line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from torchport.runtime import known_failures, watch
from torchport.runtime.sites import Site


def _line(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


def test_data_parallel_over_a_module_left_on_the_cpu_is_reported_as_tp411() -> None:
    # with one GPU, DataParallel moves the module itself; with two it refuses a CPU module
    refused = pytest.raises(RuntimeError, match="module must have its parameters")
    with refused, watch("cuda:2") as w:
        model = nn.DataParallel(nn.Linear(3, 2))
        model(torch.randn(4, 3, device="cuda"))  # fails here
    [found] = [f for f in w.findings if f.code == "TP411"]
    assert found.location is not None and found.location.line == _line("# fails here")
    assert found.fix is not None and "before wrapping" in found.fix.title


def test_an_unrelated_failure_is_no_finding() -> None:
    with pytest.raises(ValueError, match="boom"), watch("cuda") as w:
        raise ValueError("boom")
    assert w.findings == []


def test_a_device_error_torch_raises_under_the_simulation_is_reported_as_tp152() -> None:
    def autocast_on(device: torch.device) -> object:
        return torch.autocast(device, dtype=torch.float16)  # type: ignore[arg-type]  # stops here

    with pytest.raises(ValueError, match="device_type"), watch("cuda") as w:
        autocast_on(torch.device("cuda"))
    [found] = w.findings
    assert found.code == "TP152"
    assert found.location is not None and found.location.line == _line("# stops here")
    assert "ValueError" in found.message and "device_type" in found.message


def test_an_error_torch_raises_about_shapes_is_no_finding() -> None:
    # a shape mismatch fails on the CPU too: only the verdict states it
    with pytest.raises(RuntimeError, match="shapes"), watch("cuda") as w:
        torch.randn(2, 3, device="cuda") @ torch.randn(2, 3, device="cuda")
    assert w.findings == []


def test_a_failure_already_explained_at_its_line_gets_no_second_finding() -> None:
    with pytest.raises(RuntimeError, match="same device"), watch("cuda") as w:
        torch.randn(2, device="cuda") + torch.randn(2)  # explained
    assert [f.code for f in w.findings] == ["TP150"]


def test_ctc_loss_takes_its_targets_and_lengths_on_the_host_under_the_simulation() -> None:
    # CUDA's ctc_loss moves the targets to the device and reads the lengths on the host
    torch.manual_seed(0)
    log_probs = torch.randn(12, 3, 5).log_softmax(2)
    targets = torch.randint(1, 5, (3, 4))
    lengths = torch.full((3,), 12), torch.full((3,), 4)
    expected = nn.functional.ctc_loss(log_probs, targets, *lengths)
    with watch("cuda") as w:
        on_device = log_probs.to("cuda").requires_grad_()
        loss = nn.CTCLoss()(on_device, targets, *lengths)
        loss.backward()
        assert loss.device.type == "cuda" and on_device.grad is not None
        got = loss.cpu()
    assert w.findings == []
    torch.testing.assert_close(got, expected)


def test_an_error_raised_below_the_observers_own_frame_counts_as_torchs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # an op that fails in C++ leaves the observer's frame innermost, not one of torch's
    monkeypatch.setattr(known_failures, "_RUNTIME_DIR", str(Path(__file__).parent) + os.sep)
    try:
        raise RuntimeError("not implemented for 'Half' on this device")
    except RuntimeError as exc:
        site = Site(__file__, 1)
        found = known_failures.failure_on_the_device(exc, site, [])
    assert found is not None and found.code == "TP152"


def _one_process(monkeypatch: pytest.MonkeyPatch, port_base: int) -> None:
    """The environment torchrun gives a job of one process (a port per test and run)."""
    for name, value in {
        "RANK": "0", "WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port_base + os.getpid() % 90),
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)


def test_a_host_tensor_all_reduced_over_simulated_nccl_fails_as_on_a_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch.distributed as dist

    _one_process(monkeypatch, 29900)
    refused = pytest.raises(RuntimeError, match="No backend type associated with device type cpu")
    with refused, watch("cuda") as w:
        dist.init_process_group("nccl")  # gloo under the simulation, checked as NCCL
        try:
            loss = torch.ones((), device="cuda")
            dist.all_reduce(loss)  # on the device: fine
            auc = torch.tensor(0.75)  # made on the host
            dist.all_reduce(auc)  # refused here
        finally:
            dist.destroy_process_group()
    [found] = w.findings
    assert found.code == "TP152"
    assert found.location is not None and found.location.line == _line("# refused here")
    assert [r.line for r in found.related] == [_line("# made on the host")]


@pytest.mark.parametrize("backend", ["nccl", "cpu:gloo,cuda:nccl"])
def test_a_host_tensor_on_a_group_that_runs_on_gloo_is_not_refused(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    import torch.distributed as dist

    _one_process(monkeypatch, 29800)
    with watch("cuda") as w:
        dist.init_process_group(backend)
        try:
            # a CPU group for host-side bookkeeping, as real programs make one next to NCCL
            cpu_group = dist.new_group(backend="gloo")
            counts = torch.tensor([3.0, 4.0])
            dist.all_reduce(counts, group=cpu_group)
            dist.all_reduce(counts, dist.ReduceOp.SUM, cpu_group)
            if backend.startswith("cpu:"):
                dist.all_reduce(counts)  # the default group has gloo for the CPU too
        finally:
            dist.destroy_process_group()
    assert not [f for f in w.findings if f.code == "TP152"]
    assert counts.tolist() == [3.0, 4.0]


def test_a_program_that_asked_for_nccl_is_told_nccl_and_takes_its_gpu_branch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch.distributed as dist

    _one_process(monkeypatch, 29700)
    with watch("cuda") as w:
        dist.init_process_group("nccl")
        try:
            backend = dist.get_backend()
            device = torch.device("cuda") if backend == "nccl" else torch.device("cpu")
            stats = torch.tensor([1.0, 2.0], dtype=torch.float64, device=device)
            gathered = [torch.empty_like(stats)]
            dist.all_gather(gathered, stats)
        finally:
            dist.destroy_process_group()
    assert backend == "nccl"
    assert not [f for f in w.findings if f.code == "TP152"]
    assert len(gathered) == 1 and gathered[0].shape == (2,)


def test_gloo_standing_in_for_nccl_is_handed_the_host_data_of_simulated_tensors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """gloo's worker thread cannot call back into Python: on torch 2.11 (an H200 run of the
    test above) all_gather of simulated tensors failed an internal assert in PythonFallbackKernel.
    """
    import torch.distributed as dist

    handed: list[type] = []
    all_gather = dist.all_gather

    def recording(outputs: list[torch.Tensor], tensor: torch.Tensor, *args: object) -> object:
        handed.extend(type(t) for t in [*outputs, tensor])
        return all_gather(outputs, tensor, *args)

    monkeypatch.setattr(dist, "all_gather", recording)
    _one_process(monkeypatch, 29600)
    with watch("cuda"):
        dist.init_process_group("nccl")
        try:
            stats = torch.tensor([1.0, 2.0], device="cuda")
            gathered = [torch.zeros(2, device="cuda")]
            dist.all_gather(gathered, stats)
            seen = gathered[0].device, gathered[0].tolist()
        finally:
            dist.destroy_process_group()
    assert handed == [torch.Tensor, torch.Tensor]
    assert seen == (torch.device("cuda:0"), [1.0, 2.0])


@pytest.mark.parametrize("wrapped_side", ["model", "checkpoint"])
def test_a_module_prefix_mismatch_on_loading_is_reported_as_tp417(wrapped_side: str) -> None:
    bare = nn.Linear(3, 2)
    wrapped = nn.DataParallel(nn.Linear(3, 2))
    saved = (bare if wrapped_side == "model" else wrapped).state_dict()
    target = wrapped if wrapped_side == "model" else bare
    with pytest.raises(RuntimeError, match="module"), watch("cuda") as w:
        target.load_state_dict(saved)  # fails on the prefix
    [found] = [f for f in w.findings if f.code == "TP417"]
    assert found.location is not None and found.location.line == _line("# fails on the prefix")
    into = "into `model.module`" if wrapped_side == "model" else "strip the prefix"
    assert found.fix is not None and into in found.fix.title


def test_an_optimizer_refusing_a_tensor_moved_after_requires_grad_is_tp117() -> None:
    with pytest.raises(ValueError, match="non-leaf"), watch("cuda") as w:
        image = torch.rand(3, 8).requires_grad_(True).to("cuda")
        torch.optim.Adam([image], lr=0.01)  # the optimizer refuses it
    [found] = [f for f in w.findings if f.code == "TP117"]
    assert found.location is not None and found.location.line == _line("# the optimizer refuses it")


def test_a_device_error_on_a_real_accelerator_is_reported_as_tp152_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # on a GPU machine without --simulate: the same error, the same finding (an H200 run of
    # set l missed a collective refused by NCCL that the simulation reported)
    watching = sys.modules["torchport.runtime.watch"]  # the module, not the class it exports
    monkeypatch.setattr(watching, "_real_accelerator", lambda: "cuda")

    def autocast_on(device: torch.device) -> object:
        return torch.autocast(device, dtype=torch.float16)  # type: ignore[arg-type]  # on a GPU

    with pytest.raises(ValueError, match="device_type"), watch() as w:
        autocast_on(torch.device("cuda"))
    assert [(f.code, f.location and f.location.line) for f in w.findings] == [
        ("TP152", _line("# on a GPU"))
    ]
