"""Differences from a real GPU that ported corpus programs met under --simulate cuda.

Each ran on the CPU and runs on a CUDA GPU; the simulation must run it too, with the CPU's
exact numbers, and still fail where a GPU fails.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from torchport.runtime import watch
from torchport.runtime.simtensor import SimTensor

CUDA0 = torch.device("cuda:0")


def _host_scalar_ops(device: str) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    # Each makes a tensor from a Python number inside C++ (quantile: at::scalar_tensor(q,
    # self.options()), expanded and masked) or takes a 0-dim CPU tensor, which every backend
    # accepts as a scalar (TensorIterator's is_cpu_scalar).
    return {
        "quantile": lambda x: torch.quantile(x, 0.02, dim=0),
        "quantile-all": lambda x: torch.quantile(x, 0.5),
        "nanquantile": lambda x: torch.nanquantile(x, 0.5, dim=1, keepdim=True),
        "quantile-tensor-q": lambda x: torch.quantile(x, torch.tensor([0.1, 0.9], device=device)),
        "lerp": lambda x: torch.lerp(x, x * 2, 0.3),
        "where": lambda x: torch.where(x > 0, x, 0.0),
        "clamp-0dim-cpu": lambda x: torch.clamp(x, torch.tensor(-0.5), torch.tensor(0.5)),
        "masked-fill-0dim-cpu": lambda x: x.masked_fill(x > 0, torch.tensor(1.0)),
        "cdist": lambda x: torch.cdist(x, x[:3]),
        "median": lambda x: x.median(dim=0).values,
    }


@pytest.mark.parametrize("name", sorted(_host_scalar_ops("cpu")))
def test_composite_ops_that_make_host_scalars_run_on_the_simulated_gpu(name: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(10, 3)
    expected = _host_scalar_ops("cpu")[name](x)
    with watch("cuda") as w:
        got = _host_scalar_ops("cuda")[name](x.cuda())
        device, host = got.device, got.cpu()
    assert device == CUDA0
    assert torch.equal(host, expected)
    assert w.failure is None and w.findings == []


def test_a_composite_op_given_a_cpu_tensor_still_fails_as_on_a_gpu() -> None:
    # linear is a composite op too (addmm or matmul inside): the CPU weight is the user's.
    with watch("cuda"):
        x = torch.randn(4, 3, device="cuda")
        with pytest.raises(RuntimeError, match="same device"):
            nn.functional.linear(x, torch.randn(2, 3))
        with pytest.raises(RuntimeError, match="same device"):
            torch.quantile(x, torch.tensor([0.1, 0.9]), dim=0)


def _packed_gru(
    x: torch.Tensor, lengths: torch.Tensor, gru: nn.GRU
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, hidden = gru(packed)
    padded, out_lengths = pad_packed_sequence(out, batch_first=True)
    (padded.sum() + hidden.sum()).backward()
    assert gru.weight_hh_l0.grad is not None
    return padded, out_lengths, gru.weight_hh_l0.grad


def test_pack_padded_sequence_takes_cpu_lengths_with_device_data_as_cuda_requires() -> None:
    torch.manual_seed(0)
    x, lengths = torch.randn(3, 5, 2), torch.tensor([5, 2, 3])
    gru = nn.GRU(2, 4, batch_first=True)
    expected = [t.clone() for t in _packed_gru(x, lengths, gru)]
    gru.zero_grad()
    with watch("cuda") as w:
        gru.to("cuda")
        packed = pack_padded_sequence(x.cuda(), lengths, batch_first=True, enforce_sorted=False)
        padded, out_lengths, grad = _packed_gru(x.cuda(), lengths, gru)
        host = [padded.cpu(), out_lengths, grad.cpu()]
    # ATen keeps batch_sizes (made from the lengths' options) and the returned lengths on the CPU.
    assert packed.data.device == CUDA0 and type(packed.batch_sizes) is torch.Tensor
    assert padded.device == grad.device == CUDA0 and type(out_lengths) is torch.Tensor
    assert all(torch.equal(a, b) for a, b in zip(host, expected, strict=True))
    assert w.failure is None and w.findings == []


def test_pack_padded_sequence_refuses_device_lengths_with_cudas_message() -> None:
    with watch("cuda"):
        x = torch.randn(3, 5, 2, device="cuda")
        with pytest.raises(RuntimeError) as info:
            pack_padded_sequence(x, torch.tensor([5, 2, 3], device="cuda"), batch_first=True)
    assert str(info.value).startswith(
        "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor"
    )


def test_device_scalars_in_a_list_are_read_by_torch_tensor_as_on_a_gpu() -> None:
    returns = torch.arange(4.0)
    with watch("cuda") as w:
        on_device = returns.cuda()
        items = list(on_device)  # 0-dim device tensors, as when iterating over returns
        made = torch.tensor([items[1]], device="cuda")
        listed = torch.tensor(items)
        nested = torch.as_tensor([[items[2], items[3]]], device="cuda")
        newly = on_device.new_tensor([7.0, 8.0])
        values = (float(items[3]), items[2].tolist(), items[1].item())
        host = [made.cpu().tolist(), nested.cpu().tolist(), newly.cpu().tolist()]
    assert made.device == nested.device == newly.device == CUDA0
    assert type(listed) is torch.Tensor and listed.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert host == [[1.0], [[2.0, 3.0]], [7.0, 8.0]] and values == (3.0, 2.0, 1.0)
    assert isinstance(made, SimTensor) and w.failure is None


def test_reading_device_tensors_listed_as_data_counts_as_a_sync() -> None:
    with watch("cuda") as w:
        items = list(torch.arange(3.0, device="cuda"))
        torch.tensor(items)
    calls = [row["call"] for row in w.report().facts["syncs"]]
    assert calls == ["torch.tensor([device tensors])"]


def _rendered(report: object) -> list[str]:
    from torchport.report import terminal

    stream = io.StringIO()
    terminal.render(report, stream)  # type: ignore[arg-type]
    return stream.getvalue().splitlines()


def test_the_text_report_of_a_failed_run_says_nothing_was_recorded_before_the_failure() -> None:
    with pytest.raises(ZeroDivisionError), watch("cuda") as w:
        torch.ones(2, device="cuda").sum()
        1 / 0  # noqa: B018 - the program's own failure
    lines = _rendered(w.report())
    assert "No findings." not in lines
    assert lines[-2] == "No finding was recorded before the failure."
    assert lines[-1].startswith("The run failed at ") and "ZeroDivisionError" in lines[-1]


def test_the_text_report_of_an_interrupted_run_says_so() -> None:
    with pytest.raises(KeyboardInterrupt), watch() as w:
        raise KeyboardInterrupt
    lines = _rendered(w.report())
    assert lines[-2] == "No finding was recorded before the run was interrupted."
    assert lines[-1].startswith("The run was interrupted")


def test_the_text_report_of_a_clean_run_without_findings_says_no_findings() -> None:
    with watch() as w:
        torch.ones(2).sum()
    assert _rendered(w.report())[-1] == "No findings."


class _SelfTraining(nn.Linear):
    """forward_forward_layers.py's layer: it makes its optimizer in __init__, before .to()."""

    def __init__(self) -> None:
        super().__init__(3, 2)
        self.opt = torch.optim.Adam(self.parameters(), lr=0.1)

    def train_steps(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(3):
            self.opt.zero_grad()
            self(x).pow(2).mean().backward()
            self.opt.step()
        return self.weight.detach()


def test_an_optimizer_made_before_the_move_still_trains_the_moved_model() -> None:
    # On a GPU, Module.to sets the new data into the same Parameter objects (param.data = ...,
    # torch.nn.Module._apply), so the optimizer made earlier still holds the model's weights.
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    reference = _SelfTraining()
    start = {name: value.clone() for name, value in reference.state_dict().items()}
    expected = reference.train_steps(x)
    with watch("cuda") as w:
        layer = _SelfTraining()
        layer.load_state_dict(start)
        before = layer.weight
        layer.to("cuda")
        trained = layer.train_steps(x.cuda()).cpu()
        same = layer.weight is before and layer.weight.device == CUDA0
    assert same and torch.equal(trained, expected)
    assert w.failure is None


def test_a_parameter_that_cannot_be_swapped_is_still_moved() -> None:
    import weakref

    with watch("cuda"):
        layer = nn.Linear(3, 2)
        watcher = weakref.ref(layer.weight)  # swap_tensors refuses a tensor with weak references
        layer.to("cuda")
        out = layer(torch.ones(1, 3, device="cuda"))
    assert layer.weight.device == out.device == CUDA0
    del watcher


def test_dataparallel_fed_cpu_batches_is_no_cpu_compute() -> None:
    # DataParallel scatters a CPU batch to the GPUs in C++ (comm.scatter); only its metadata
    # queries (is_complex) are torch calls on the CPU, and those compute nothing.
    with watch("cuda") as w:
        model = nn.DataParallel(nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 1)))
        model.to("cuda")
        for _ in range(40):
            model(torch.randn(32, 10)).sum().backward()
    assert w.report().facts["ops_in_forward_by_device"].get("cpu", 0) == 0
    # No CPU-compute finding; only the advice `check` gives too: DDP is the supported path.
    assert [f.code for f in w.findings] == ["TP401"]


class _GraphLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(x)
        return out.index_add(0, edge_index[1], (x @ self.weight)[edge_index[0]])


@pytest.mark.parametrize("simulate", [None, "cuda"])
def test_integer_indices_beside_the_features_of_a_users_layer_are_no_finding(
    simulate: str | None,
) -> None:
    device = "cuda" if simulate else "cpu"
    with watch(simulate) as w:
        layer = _GraphLayer().to(device)
        edges = torch.tensor([[0, 1, 2], [1, 2, 3]], device=device)
        layer(torch.randn(5, 4, device=device), edges)
    assert [f.code for f in w.findings] == []


def test_an_integer_input_to_a_torch_layer_is_still_reported() -> None:
    with watch() as w, pytest.raises(RuntimeError):
        nn.Linear(4, 2)(torch.randint(0, 9, (3, 4)))
    assert [f.code for f in w.findings] == ["TP303"]


def test_autocast_on_the_simulated_gpu_defaults_to_float16_as_cuda_does() -> None:
    # torch.get_autocast_dtype("cuda") is float16; CPU autocast's own default is bfloat16.
    with watch("cuda"):
        a = torch.randn(3, 3, device="cuda")
        with torch.autocast("cuda"):
            modern = (a @ a).dtype
        with torch.autocast(device_type="cuda", enabled=True):
            keyword = (a @ a).dtype
        with torch.autocast("cuda", torch.bfloat16):
            chosen = (a @ a).dtype
    assert modern == keyword == torch.float16 and chosen == torch.bfloat16
