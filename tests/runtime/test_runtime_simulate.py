"""--simulate: a CPU-backed GPU that trains for real and fails where a real GPU fails."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import pytest
import torch
from runtime_support import SCRIPTS, run_script
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.utils.data import DataLoader, TensorDataset, dataloader

from torchport.errors import UsageError
from torchport.runtime import watch
from torchport.runtime.simulate import parse_spec


def test_simulated_training_prints_the_same_numbers_as_the_cpu_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = SCRIPTS / "good_training.py"
    with monkeypatch.context() as cpu_only:
        # The script picks CUDA when there is one: on a GPU machine the reference run must
        # still be the CPU's (the GPU's kernels and random numbers differ from the CPU's).
        cpu_only.setattr(torch.cuda, "is_available", lambda: False)
        assert run_script(script)[0] == 0
    on_cpu = capsys.readouterr().out
    assert run_script(script, "cuda")[0] == 0
    simulated = capsys.readouterr().out
    assert "checksum" in on_cpu
    assert simulated == on_cpu


def test_device_queries_report_the_simulated_gpus() -> None:
    with watch("cuda:4"):
        assert torch.cuda.is_available()
        assert torch.cuda.device_count() == 4
        assert "Simulated" in torch.cuda.get_device_name(0)
        torch.cuda.set_device(2)
        assert torch.cuda.current_device() == 2
        assert torch.ones(1, device="cuda").device == torch.device("cuda:2")
        assert torch.accelerator.current_accelerator() == torch.device("cuda")
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            torch.ones(1).to("cuda:4")


def _snapshot() -> dict[str, object]:
    return {
        "is_available": torch.cuda.is_available,
        "device_count": torch.cuda.device_count,
        "synchronize": torch.cuda.synchronize,
        "Stream": torch.cuda.Stream,
        "acc": torch.accelerator.is_available,
        "pin": torch.Tensor.pin_memory,
        "is_pinned": torch.Tensor.is_pinned,
        "autocast": torch.amp.autocast_mode.autocast.__init__,
        "future": torch.__future__.get_overwrite_module_params_on_conversion(),
        "from_numpy": torch.from_numpy,
        "next": dataloader._BaseDataLoaderIter.__next__,
        "pre_hooks": len(module_hooks._global_forward_pre_hooks),
        "hooks": len(module_hooks._global_forward_hooks),
        "modes": torch._C._len_torch_function_stack(),
    }


def test_everything_patched_is_restored_also_after_an_error() -> None:
    before = _snapshot()
    really_available = torch.cuda.is_available()  # True on a GPU machine, False elsewhere
    with pytest.raises(ZeroDivisionError), watch("cuda"):
        assert _snapshot() != before
        nn.Linear(2, 2).to("cuda")(torch.ones(1, 2, device="cuda"))
        raise ZeroDivisionError
    assert _snapshot() == before
    assert torch.cuda.is_available() is really_available


def test_mixing_devices_raises_the_error_real_cuda_raises() -> None:
    with watch("cuda"):
        gpu = torch.ones(3, device="cuda")
        assert (gpu * torch.tensor(2.0)).device.type == "cuda"  # 0-dim CPU tensors are allowed
        with pytest.raises(RuntimeError) as info:
            gpu + torch.ones(3)
    assert str(info.value).startswith(
        "Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu!"
    )


def test_a_0_dim_cpu_tensor_written_by_a_device_op_raises_as_on_a_gpu() -> None:
    # read, a 0-dim CPU tensor is a scalar; written in place (an accumulator), CUDA refuses it
    with watch("cuda"):
        total = torch.tensor(0.0)
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            total += torch.ones(3, device="cuda").sum()
        on_device = torch.zeros((), device="cuda")
        on_device += torch.tensor(1.0)  # written on the device, read from the host: allowed
        assert on_device.device.type == "cuda"
        assert on_device.item() == 1.0


def test_numpy_of_a_simulated_tensor_raises_the_real_error() -> None:
    with watch("cuda"), pytest.raises(TypeError, match="can't convert cuda:0 device type"):
        torch.ones(2).cuda().numpy()


def test_module_to_keeps_parameters_and_gradients_on_the_simulated_device() -> None:
    with watch("cuda"):
        model = nn.Linear(3, 1).cuda()
        model(torch.ones(2, 3, device="cuda")).sum().backward()
        assert isinstance(model.weight, nn.Parameter)
        assert model.weight.device == torch.device("cuda:0")
        assert model.weight.grad is not None
        assert model.weight.grad.device == torch.device("cuda:0")
        assert "device='cuda:0'" in repr(model.weight)


def test_cpu_copy_of_a_simulated_tensor_is_plain_and_keeps_gradients() -> None:
    with watch("cuda"):
        leaf = torch.ones(2, requires_grad=True)
        host = (leaf.to("cuda") * 3).cpu()
        assert type(host) is torch.Tensor
        assert host.device.type == "cpu"
        host.sum().backward()
    assert leaf.grad is not None
    assert leaf.grad.tolist() == [3.0, 3.0]


def test_pin_memory_loader_gives_pinned_batches_without_a_warning() -> None:
    data = TensorDataset(torch.ones(8, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with watch("cuda") as w:
            for (batch,) in DataLoader(data, batch_size=4, pin_memory=True):
                assert batch.is_pinned()
                batch.to("cuda", non_blocking=True)
    assert not any(f.code == "TP251" for f in w.findings)


def test_autocast_cuda_computes_in_the_requested_dtype() -> None:
    with watch("cuda"):
        a = torch.ones(4, 4, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            product = a @ a
        assert product.dtype == torch.bfloat16
        assert product.device.type == "cuda"


def test_mps_simulation_moves_to_mps_and_leaves_cuda_as_it_is() -> None:
    real_cuda = torch.cuda.is_available()
    with watch("mps"):
        assert torch.ones(1).to("mps").device == torch.device("mps:0")
        assert torch.backends.mps.is_available()
        if real_cuda:  # a GPU machine: the MPS simulation does not hide its real GPU
            assert torch.ones(1).cuda().device.type == "cuda"
        else:
            with pytest.raises((AssertionError, RuntimeError)):
                torch.ones(1).cuda()


@pytest.mark.parametrize("spec", ["rocm", "cuda:0", "mps:2", "cuda:x"])
def test_bad_simulate_spec_is_a_usage_error(spec: str) -> None:
    with pytest.raises(UsageError):
        parse_spec(spec)


def test_what_cannot_be_simulated_is_said_once_and_the_program_carries_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with watch("cuda"):
        model = nn.Linear(2, 1).cuda()
        compiled = torch.compile(model)
        compiled(torch.ones(1, 2, device="cuda"))
        torch.compile(model)
    assert compiled is model
    assert capsys.readouterr().err.count("cannot simulate torch.compile") == 1


def test_streams_and_events_run_and_synchronize_counts_as_a_sync() -> None:
    with watch("cuda") as w:
        stream = torch.cuda.Stream()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(stream):
            start.record()
            torch.ones(4, device="cuda").sum()
            end.record()
        end.synchronize()
        assert start.elapsed_time(end) >= 0.0
    assert [row["call"] for row in w.report().facts["syncs"]] == ["Event.synchronize"]


def test_amp_training_with_grad_scaler_and_checkpoint_round_trip(tmp_path: Path) -> None:
    with watch("cuda"):
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(torch.randn(4, 8, device="cuda")).square().mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        torch.save(model.state_dict(), tmp_path / "model.pt")
        state = torch.load(tmp_path / "model.pt", map_location="cuda")
        model.load_state_dict(state)
    assert state["0.weight"].device == torch.device("cuda:0")
    # The file is a GPU checkpoint: on this CPU-only machine it loads with map_location only.
    assert type(torch.load(tmp_path / "model.pt", map_location="cpu")["0.weight"]) is torch.Tensor
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="map_location"):
            torch.load(tmp_path / "model.pt")


def test_in_place_view_ops_update_the_simulated_tensor_shape() -> None:
    torch.manual_seed(0)
    rnn = nn.GRU(5, 16, batch_first=True)
    x, h0 = torch.randn(4, 7, 5), torch.zeros(1, 4, 16)
    expected = rnn(x, h0)[0]
    with watch("cuda"):
        out = rnn.cuda()(x.cuda(), h0.cuda())[0]
        squeezed = torch.ones(1, 3, device="cuda").squeeze_(0)
        assert squeezed.shape == (3,)
        assert out.shape == (4, 7, 16)
        assert torch.equal(out.cpu(), expected)


def test_tolist_of_a_simulated_tensor_copies_to_the_host() -> None:
    with watch("cuda"):
        assert torch.arange(3, device="cuda").tolist() == [0, 1, 2]


def test_data_parallel_on_two_simulated_gpus_matches_the_cpu() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    x = torch.randn(6, 4)
    expected = model(x)
    with watch("cuda:2"):
        parallel = nn.DataParallel(model).to("cuda")
        out = parallel(x.to("cuda"))
        out.sum().backward()
        assert out.device == torch.device("cuda:0")
        assert torch.allclose(out.cpu(), expected)
    assert model[0].weight.grad is not None


def test_ops_of_another_thread_do_not_count_as_the_running_forward() -> None:
    class StartsAThread(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            worker = threading.Thread(target=lambda: [torch.ones(8) * 2 for _ in range(60)])
            worker.start()
            worker.join()
            return x * 2

    with watch(simulate="cuda") as w:
        StartsAThread()(torch.ones(2, device="cuda"))
    assert w.record.ops_by_device == {"cuda": 1}
    assert [f.code for f in w.findings] == []


@pytest.mark.parametrize("layer", [nn.RNN, nn.LSTM, nn.GRU])
def test_a_recurrent_layer_moves_under_the_simulation(layer: type[nn.Module]) -> None:
    # Module.to swaps an RNN's parameters in place, which a weak reference to one of them
    # (bookkeeping keyed by the copied tensor) makes fail: "_apply(): Couldn't swap"
    with watch("cuda"):
        rnn = layer(4, 4).to("cuda")
        out, _ = rnn(torch.randn(3, 2, 4, device="cuda"))
    assert out.device.type == "cuda"
    assert all(p.device.type == "cuda" for p in rnn.parameters())
