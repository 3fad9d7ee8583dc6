"""The simulated GPU behaves as a real one where these programs met a difference."""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from torchport.runtime import simdevices, siminside, simtensor, watch
from torchport.runtime.simtensor import SimTensor


def test_a_checkpoint_of_gpu_tensors_loads_back_onto_the_gpu_without_map_location() -> None:
    with watch("cuda"):
        buffer = io.BytesIO()
        torch.save({"w": torch.ones(2, device="cuda"), "host": torch.zeros(2)}, buffer)
        buffer.seek(0)
        restored = torch.load(buffer)
        buffer.seek(0)
        on_cpu = torch.load(buffer, map_location="cpu")
        buffer.seek(0)
        remapped = torch.load(buffer, map_location={"cuda:0": "cpu"})
    assert restored["w"].device == torch.device("cuda:0")
    assert restored["host"].device == torch.device("cpu")
    assert type(on_cpu["w"]) is torch.Tensor and type(remapped["w"]) is torch.Tensor


def test_a_pickled_module_loads_onto_the_gpu_and_trains_there() -> None:
    with watch("cuda") as w:
        model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to("cuda")
        buffer = io.BytesIO()
        torch.save(model, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, map_location="cuda", weights_only=False)
        loaded(torch.randn(5, 3, device="cuda")).sum().backward()
        weight = loaded[0].weight
    assert isinstance(weight, nn.Parameter) and weight.requires_grad
    assert weight.device == loaded[1].running_mean.device == torch.device("cuda:0")
    assert weight.grad is not None and weight.grad.device == torch.device("cuda:0")
    assert w.findings == []


def test_clip_grad_norm_groups_gradients_by_their_simulated_device() -> None:
    with watch("cuda") as w:
        model = nn.Linear(4, 2).to("cuda")
        for _ in range(6):
            model(torch.randn(3, 4, device="cuda")).sum().backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    assert norm.device == torch.device("cuda:0")
    assert "syncs" not in w.report().facts and w.findings == []


def test_indexing_with_cpu_indices_also_runs_backward() -> None:
    with watch("cuda") as w:
        table = torch.randn(5, 3, device="cuda", requires_grad=True)
        table[torch.tensor([0, 2, 2])].sum().backward()
        mask = torch.tensor([True, False, True, False, True])
        table[mask].sum().backward()
        grad = table.grad
    assert grad is not None and grad.device == torch.device("cuda:0")
    assert w.findings == []


def test_a_device_index_into_a_cpu_tensor_raises_cudas_error() -> None:
    with watch("cuda"), pytest.raises(RuntimeError) as info:
        torch.arange(4.0)[torch.tensor([1], device="cuda")]
    assert str(info.value).startswith(
        "indices should be either on cpu or on the same device as the indexed tensor (cpu)"
    )


class _Normalize(nn.Module):
    """A transform written as a module (as torchvision's are), run by the dataset."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - x.mean()) / (x.std() + 1e-6)


class _Images(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    def __init__(self) -> None:
        self.transform = _Normalize()

    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        image = torch.full((3, 8, 8), float(i))
        for _ in range(4):
            image = self.transform(image.clone())
        return image, torch.tensor(i % 2)


def test_transforms_run_by_a_loader_are_not_counted_as_the_models_cpu_compute() -> None:
    with watch("cuda") as w:
        model = nn.Sequential(nn.Flatten(), nn.Linear(192, 2)).to("cuda")
        for _epoch in range(3):
            for x, y in DataLoader(_Images(), batch_size=4):
                loss = nn.functional.cross_entropy(model(x.to("cuda")), y.to("cuda"))
                loss.backward()
    assert [f for f in w.findings if f.code == "TP151"] == []
    assert w.report().facts["ops_in_forward_by_device"].get("cpu", 0) == 0


def test_a_warning_raised_inside_an_op_is_shown_at_the_users_line() -> None:
    x = torch.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        shown: list[tuple[str, int]] = []
        original = warnings.showwarning
        warnings.showwarning = lambda m, c, f, n, *a: shown.append((f, n))  # type: ignore[assignment]
        try:
            with watch():
                float(x.sum())  # warns: requires_grad tensor converted to a scalar
        finally:
            warnings.showwarning = original
    assert shown == [(__file__, _line_of("float(x.sum())  # warns"))]


def test_a_failed_run_reports_the_error_and_the_users_line_not_no_findings() -> None:
    with pytest.raises(ZeroDivisionError), watch("cuda") as w:
        torch.ones(2, device="cuda").sum()
        1 / 0  # noqa: B018 - the program's own failure
    report = w.report()
    assert report.facts["failed"] == {
        "error": "ZeroDivisionError: division by zero",
        "at": f"{__file__}:{_line_of('1 / 0  # noqa')}",
    }
    assert report.verdict is not None and report.verdict.startswith("The run failed at")


def test_a_failure_inside_backward_is_reported_as_such() -> None:
    class Broken(torch.autograd.Function):
        @staticmethod
        def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
            raise ValueError("no gradient today")

    with pytest.raises(ValueError), watch() as w:
        Broken.apply(torch.ones(2, requires_grad=True)).sum().backward()
    failed = w.report().facts["failed"]
    assert failed["error"] == "ValueError: no gradient today" and failed["during"] == "backward"
    assert "in backward()" in (w.report().verdict or "")


def test_the_accelerator_api_reports_the_simulated_gpu() -> None:
    with watch("cuda:2"):
        assert torch.accelerator.is_available()
        assert torch.accelerator.current_accelerator() == torch.device("cuda")
        assert torch.accelerator.device_count() == 2
        torch.accelerator.set_device_index(1)
        assert torch.accelerator.current_device_index() == 1


def test_pinning_a_device_tensor_is_refused_as_on_a_gpu() -> None:
    with watch("cuda"):
        with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
            torch.empty(3, device="cuda", pin_memory=True)
        with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
            torch.ones(3, device="cuda").pin_memory()
        assert torch.empty(3, pin_memory=True).is_pinned()


def test_to_with_copy_true_copies_even_on_the_same_device() -> None:
    with watch("cuda"):
        x = torch.ones(3, device="cuda")
        y = x.to("cuda", copy=True)
        y.add_(1)
        same = x.to("cuda")
        kept = x.cpu().tolist()
    assert y is not x and same is x and kept == [1.0, 1.0, 1.0]
    assert isinstance(y, SimTensor)


def _line_of(text: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line and "_line_of" not in line)


def test_files_of_installed_libraries_are_never_named_as_the_users_line() -> None:
    from torchport.runtime.sites import is_user_file

    assert not is_user_file("/env/lib/python3.11/site-packages/torchvision/transforms.py")
    assert not is_user_file("/usr/lib/python3/dist-packages/timm/models/vit.py")
    assert is_user_file(__file__)


def test_module_to_an_index_or_a_device_keyword_moves_it_to_the_simulated_accelerator() -> None:
    # pytorch/examples' DDP tutorial: `model.to(local_rank)`, then batches `.to(local_rank)`
    with watch("cuda") as w:
        model = nn.Linear(3, 1).to(0)
        by_keyword = nn.Linear(3, 1).to(device=0)
        by_name = nn.Linear(3, 1).to(device="cuda")
        out = model(torch.randn(2, 3).to(0))
    assert next(model.parameters()).device == torch.device("cuda", 0)
    assert next(by_keyword.parameters()).device == torch.device("cuda", 0)
    assert next(by_name.parameters()).device == torch.device("cuda", 0)
    assert out.device == torch.device("cuda", 0)
    assert w.failure is None


def test_memory_statistics_calls_and_cuda_device_work_as_on_a_gpu() -> None:
    # the timing helpers of PyTorch's AMP recipe reset the peak statistics between trials
    with warnings.catch_warnings(), watch("cuda") as w:
        warnings.simplefilter("ignore")  # reset_max_memory_allocated is deprecated
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.reset_max_memory_allocated()
        assert torch.cuda.max_memory_reserved() == 0
        with torch.cuda.device(0) as chosen:
            assert isinstance(chosen, torch.cuda.device)
            assert torch.zeros(1, device="cuda").device == torch.device("cuda", 0)
    assert w.failure is None


def test_integer_bookkeeping_kept_on_the_host_is_not_counted_as_cpu_compute() -> None:
    # pack_padded_sequence wants its lengths on the CPU: sorting them is not a model left behind
    with watch("cuda") as w:
        rnn = nn.GRU(3, 4, batch_first=True).to("cuda")
        for _ in range(40):
            lengths = torch.randint(1, 6, (8,))
            order = lengths.argsort(descending=True)
            lengths = lengths[order].clamp(min=1)
            x = torch.randn(8, 5, 3, device="cuda")
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
            rnn(packed)
    assert [f for f in w.findings if f.code == "TP151"] == []
    assert "cpu" not in w.report().facts["ops_in_forward_by_device"]


def test_a_torch_function_that_makes_its_own_tensors_on_the_input_device_runs() -> None:
    # F.embedding_bag makes its offsets with device=input.device inside torch's own Python code
    torch.manual_seed(0)
    bag = nn.EmbeddingBag(20, 4, mode="mean")
    ids = torch.randint(0, 20, (3, 5))
    expected = bag(ids)
    with watch("cuda") as w:
        out = bag.to("cuda")(ids.to("cuda"))
        on_device = out.device
        values = out.cpu()
    assert on_device == torch.device("cuda", 0)
    assert torch.allclose(values, expected.detach())
    assert not w.record.internal_errors


def _raised_in(dispatch_file: str, op_file: str, message: str) -> RuntimeError:
    """``message`` raised by an op of ``op_file`` called by a ``__torch_dispatch__`` of
    ``dispatch_file`` (the frames an op on a simulated tensor's host data leaves)."""
    space: dict[str, Any] = {}
    exec(compile("def op(m):\n    raise RuntimeError(m)\n", op_file, "exec"), space)
    exec(compile("def __torch_dispatch__(m):\n    op(m)\n", dispatch_file, "exec"), space)
    try:
        space["__torch_dispatch__"](message)
    except RuntimeError as exc:
        return exc
    raise AssertionError("not raised")


def test_a_real_cuda_tensor_made_inside_a_torch_function_is_run_again_observed() -> None:
    # --simulate on a GPU machine: pca_lowrank's unobserved randn(device=A.device) is a real
    # CUDA tensor, which the simulated tensor's dispatch then meets beside its host data
    mismatch = (
        "Expected all tensors to be on the same device, but got mat2 is on cuda:0, "
        "different from other tensors on cpu (when checking argument in method wrapper_CUDA_mm)"
    )
    ops = torch._ops.__file__
    inside = _raised_in(simtensor.__file__, ops, mismatch)
    assert siminside.reached_real_cuda(torch.pca_lowrank, inside)
    assert not siminside.reached_real_cuda(torch.matmul, inside)  # C++: nothing to run again
    # the user's own CPU tensor beside a device one fails outside the dispatch: a real mistake
    assert not siminside.reached_real_cuda(torch.pca_lowrank, _raised_in(__file__, ops, mismatch))
    # the simulation's own device check (a host tensor the program made meets a device one)
    own = _raised_in(simtensor.__file__, simdevices.__file__, mismatch)
    assert not siminside.reached_real_cuda(torch.autograd.backward, own)
    other = _raised_in(simtensor.__file__, ops, "mat1 and mat2 shapes cannot be multiplied")
    assert not siminside.reached_real_cuda(torch.pca_lowrank, other)


class _OneHotGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(logits, targets)
        return logits.logsumexp(-1).sum()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        logits, targets = ctx.saved_tensors
        # a composite op: C++ makes its zeros from the target's options, on the device on a GPU
        onehot = nn.functional.one_hot(targets, logits.shape[-1]).float()
        return (logits.softmax(-1) - onehot + onehot) * grad, None


def test_a_composite_op_in_an_autograd_functions_backward_runs_as_on_a_gpu() -> None:
    torch.manual_seed(0)
    logits = torch.randn(4, 5)
    targets = torch.tensor([0, 3, 1, 4])
    expected = torch.softmax(logits, -1)
    with watch("cuda") as w:
        x = logits.to("cuda").requires_grad_()
        _OneHotGrad.apply(x, targets.to("cuda")).backward()
        grad = x.grad
        assert grad is not None and grad.device.type == "cuda"
        values = grad.cpu()
    assert torch.allclose(values, expected, atol=1e-6)
    assert [f for f in w.findings if f.code in ("TP150", "TP152")] == []


def test_a_host_tensor_the_program_makes_in_backward_is_still_a_mismatch() -> None:
    class HostBias(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            return x.sum()

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
            return grad * torch.ones(3) + torch.zeros(3)  # made on the host, as on a GPU

    with pytest.raises(RuntimeError, match="same device"), watch("cuda"):
        x = torch.randn(3, device="cuda", requires_grad=True)
        HostBias.apply(x * 2).backward()


def test_backward_of_an_indexed_write_of_a_parameter_runs_as_on_a_gpu() -> None:
    # MAE-style masking: x[rows, index] = mask_token; the engine's gradient buffers are its own
    with watch("cuda") as w:
        token = nn.Parameter(torch.zeros(1, 1, 4, device="cuda"))
        x = torch.randn(2, 5, 4, device="cuda", requires_grad=True)
        index = torch.tensor([[1, 2], [0, 3]], device="cuda")
        masked = x.clone()
        masked[torch.arange(2, device="cuda")[:, None], index] = token.squeeze(0)
        masked.sum().backward()
        grads = token.grad.cpu(), x.grad.cpu()  # type: ignore[union-attr]
    assert grads[0].flatten().tolist() == [4.0] * 4  # the token was written 4 times
    assert grads[1].sum().item() == 2 * 5 * 4 - 4 * 4
    assert not any(f.code == "TP150" for f in w.findings)


@pytest.mark.parametrize("mode", [torch.no_grad, torch.inference_mode])
def test_a_model_moves_to_the_device_under_no_grad_and_inference_mode(mode: type) -> None:
    with watch("cuda") as w, mode():
        model = nn.Linear(2, 2)
        weight = model.weight
        model = model.to("cuda")
        out = model(torch.randn(1, 2, device="cuda"))
    assert out.device.type == "cuda" and model.weight.device.type == "cuda"
    assert model.weight is weight  # moved in place, as on a GPU
    assert w.findings == []


class _MaskedMatmul(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(
        ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, w: torch.Tensor
    ) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x.matmul(w.t())

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors  # type: ignore[attr-defined]
        return grad.matmul(w), grad.t().matmul(x)


def test_custom_bwd_runs_under_the_forwards_simulated_autocast() -> None:
    # on a GPU, custom_bwd re-enters the autocast of the forward: the float16 gradient meets
    # the float32 weight in a matmul that autocast casts, instead of a dtype error
    with watch("cuda") as w:
        x = torch.randn(4, 3, device="cuda", requires_grad=True)
        weight = torch.randn(2, 3, device="cuda", requires_grad=True)
        with torch.autocast("cuda", dtype=torch.float16):
            assert torch.is_autocast_enabled("cuda")
            out = _MaskedMatmul.apply(x, weight)
        assert out.dtype == torch.float16 and not torch.is_autocast_enabled("cuda")
        out.float().sum().backward()
    assert w.failure is None and weight.grad is not None


def test_a_lazy_module_moved_before_its_first_call_makes_its_weights_on_the_device() -> None:
    torch.manual_seed(0)
    with watch("cuda") as w:
        net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyBatchNorm1d()).to("cuda")
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        x = torch.randn(4, 5, device="cuda")
        net(x).sum().backward()
        before = net[0].weight.detach().clone()
        optimizer.step()  # the optimizer made before the first call updates the made weight
        moved = net[0].weight.detach() - before
        devices = {net[0].weight.device, net[2].running_mean.device, net[2].weight.device}
        changed = bool(moved.abs().sum() > 0)
    assert devices == {torch.device("cuda", 0)}
    assert isinstance(net[0].weight, nn.Parameter) and net[0].weight.shape == (8, 5)
    assert changed
    assert not w.record.internal_errors
    assert [f for f in w.findings if f.code in ("TP150", "TP152")] == []


def test_autocast_on_the_simulated_gpu_uses_cudas_float32_list_not_the_cpus() -> None:
    # CUDA autocast runs softmax, exp, layer_norm, sum and pow in float32 (CPU autocast leaves
    # them float16), and leaves reflect padding and 3-D max pooling alone (CPU autocast casts
    # them up); a call with dtype= is not autocast's to change
    with watch("cuda"):
        linear, norm = nn.Linear(8, 8).to("cuda"), nn.LayerNorm(8).to("cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            h = linear(torch.randn(4, 8, device="cuda"))
            up = [h.softmax(-1), torch.nn.functional.log_softmax(h, -1), h.exp(), norm(h)]
            up += [h.sum(), h**2, torch.nn.functional.normalize(h)]
            kept = [
                torch.nn.functional.pad(h.unsqueeze(0), (2, 2), mode="reflect"),
                torch.nn.functional.max_pool3d(h.view(1, 1, 2, 2, 8), 2),
                h.softmax(-1, dtype=torch.float16),
            ]
            outside = torch.randn(4, 8, device="cuda", dtype=torch.float16)
        assert h.dtype is torch.float16
        assert [t.dtype for t in up] == [torch.float32] * len(up)
        assert [t.dtype for t in kept] == [torch.float16] * len(kept)
        assert outside.softmax(-1).dtype is torch.float16  # no autocast there
