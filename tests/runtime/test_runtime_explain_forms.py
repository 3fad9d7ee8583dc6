"""Every operator form that mixes devices reaches the explainer, and the explainer never crashes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from torchport.runtime import watch
from torchport.runtime.explain import Explainer
from torchport.runtime.observer import Observer

T = torch.Tensor
# Each form mixes a simulated-GPU tensor `g` with a CPU tensor `c`, as user code writes it.
FORMS: dict[str, Callable[[T, T], object]] = {
    "a == b": lambda g, c: g == c,
    "a != b": lambda g, c: g != c,
    "a < b": lambda g, c: g < c,
    "a >= b": lambda g, c: g >= c,
    "a + b": lambda g, c: g + c,
    "b + a (cpu on the left)": lambda g, c: c + g,
    "a - b": lambda g, c: g - c,
    "a * b": lambda g, c: g * c,
    "a / b": lambda g, c: g / c,
    "a // b": lambda g, c: g // c,
    "a ** b": lambda g, c: g**c,
    "a % b": lambda g, c: g % c,
    "a @ b": lambda g, c: g @ c,
    "a & b": lambda g, c: (g > 0) & (c > 0),
    "a += b": lambda g, c: g.__iadd__(c),
    "a *= b": lambda g, c: g.__imul__(c),
    "reflected b - a": lambda g, c: c.__rsub__(g),
    "reflected b ** a": lambda g, c: c.__rpow__(g),
    "cpu[device index]": lambda g, c: c[g.long().clamp(0, 2)],
    "torch.where(cond, a, b)": lambda g, c: torch.where(g > 0, g, c),
    "torch.where(cpu cond, a, a)": lambda g, c: torch.where(c > 0, g, g),
    "torch.cat([a, b])": lambda g, c: torch.cat([g, c]),
    "torch.stack([b, a])": lambda g, c: torch.stack([c, g]),
    "a.index_put_(…, cpu values)": lambda g, c: g.__setitem__(g > 0, c),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_each_operator_form_that_mixes_devices_is_explained(form: str) -> None:
    with watch("cuda") as w:
        gpu, cpu = torch.ones(3, device="cuda"), torch.ones(3)
        with pytest.raises(RuntimeError) as info:
            FORMS[form](gpu, cpu)
    message = str(info.value)
    assert "torchport:" in message and "was given:" in message, message
    assert "on cuda:0" in message and "on cpu" in message
    assert "torchport could not explain" not in message
    assert [f.code for f in w.findings] == ["TP150"]
    location = w.findings[0].location
    assert location is not None and location.path == __file__


def test_a_comparison_names_its_two_operands() -> None:
    with watch("cuda"), pytest.raises(RuntimeError) as info:
        preds, targets = torch.zeros(4, device="cuda"), torch.zeros(4)
        preds == targets  # noqa: B015 - the comparison is what fails
    assert "- self: on cuda:0" in str(info.value)
    assert "- other: on cpu" in str(info.value)


def test_cpu_indices_into_a_device_tensor_are_no_mismatch_as_on_cuda() -> None:
    # ATen accepts index tensors on the CPU for a CUDA tensor (check_indices_on_cpu_or_selfdevice),
    # and a write moves them to the tensor's device (make_info), so neither raises.
    with watch("cuda") as w:
        values = torch.arange(5.0, device="cuda")
        picked = values[torch.tensor([0, 2])]
        values[torch.tensor([1, 3])] = 0.0
        written = values.cpu().tolist()
    assert picked.device == torch.device("cuda:0")
    assert written == [0.0, 0.0, 2.0, 0.0, 4.0]
    assert w.findings == []


def test_an_explainer_failure_keeps_the_error_and_adds_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise AttributeError("'method-wrapper' object has no attribute 'overloads'")

    monkeypatch.setattr(Explainer, "explain", broken)
    with watch("cuda") as w, pytest.raises(RuntimeError) as info:
        torch.ones(3, device="cuda") == torch.ones(3)  # noqa: B015
    lines = str(info.value).splitlines()
    assert lines[0].startswith("Expected all tensors to be on the same device")
    assert lines[1] == (
        "torchport could not explain this: AttributeError: 'method-wrapper' object has no "
        "attribute 'overloads'"
    )
    assert len(lines) == 2
    assert "explaining an error" in w.report().facts["torchport_internal_errors"][0]


def test_a_failure_in_the_observers_bookkeeping_never_reaches_the_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: Observer, *args: object) -> None:
        raise KeyError("bookkeeping")

    monkeypatch.setattr(Observer, "_count", broken)
    monkeypatch.setattr(Observer, "_check_pending", broken)
    with watch("cuda") as w:
        model = torch.nn.Linear(3, 1).to("cuda")
        out = model(torch.ones(2, 3, device="cuda")).sum()
        out.backward()
    assert out.device == torch.device("cuda:0")
    assert any("counting an op" in e for e in w.record.internal_errors)


def _line(marker: str) -> int:
    text = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(text, 1) if marker in line and "_line(" not in line)


def test_a_window_made_on_the_host_is_named_where_it_was_made() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError):
        wav = torch.randn(2, 256, device="cuda")
        window = torch.hann_window(64)  # the window's line
        torch.stft(wav, 64, window=window, return_complex=True)
    [found] = [f for f in w.findings if f.code == "TP150"]
    assert _line("# the window's line") in [r.line for r in found.related]


def test_a_device_tensor_among_host_ones_is_named_where_it_was_made() -> None:
    # the layer and its input stay on the CPU; the odd one out is the state made on "cuda"
    with watch("cuda") as w, pytest.raises(RuntimeError):
        rnn = torch.nn.GRU(4, 8, batch_first=True)
        hidden = torch.zeros(1, 2, 8, device="cuda")  # the hidden state's line
        rnn(torch.randn(2, 3, 4), hidden)
    [found] = [f for f in w.findings if f.code == "TP150"]
    assert _line("# the hidden state's line") in [r.line for r in found.related]


def test_a_host_buffer_filled_by_copy_is_named_where_it_was_made() -> None:
    # an EMA's flat copy of the weights: made on the host, then filled from the device
    with watch("cuda") as w, pytest.raises(RuntimeError):
        weights = torch.randn(6, device="cuda")
        shadow = torch.zeros(6)  # the buffer's line
        shadow.copy_(weights)
        shadow - weights  # the op that fails
    [found] = [f for f in w.findings if f.code == "TP150"]
    assert _line("# the buffer's line") in [r.line for r in found.related]


class _ProxyLoss(torch.nn.Module):
    """A loss with learnable proxies, which programs forget to move with the model."""

    def __init__(self) -> None:
        super().__init__()
        self.proxies = torch.nn.Parameter(torch.randn(3, 4))

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        unit = torch.nn.functional.normalize(self.proxies, dim=1)
        return embeddings @ unit.t()


def test_a_host_value_computed_in_a_module_left_on_the_host_names_where_it_was_made() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError):
        loss_fn = _ProxyLoss()  # the loss's line
        loss_fn(torch.randn(2, 4, device="cuda"))
    [found] = [f for f in w.findings if f.code == "TP150"]
    assert _line("# the loss's line") in [r.line for r in found.related]
