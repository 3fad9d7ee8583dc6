"""`run` sees mixed-precision mistakes as they happen (runtime/amp.py), wherever the code is,
and says nothing about a correct AMP loop, a disabled scaler or bfloat16 without a scaler."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from torchport.findings import Severity
from torchport.runtime import watch

HERE = Path(__file__).read_text(encoding="utf-8").splitlines()


def _line(marker: str) -> int:
    """The line of this file that carries ``# <marker>``."""
    [line] = [n for n, text in enumerate(HERE, 1) if text.rstrip().endswith(f"# {marker}")]
    return line


def _codes(w: watch) -> set[tuple[str, int]]:
    return {
        (f.code, f.location.line)
        for f in w.findings
        if f.severity >= Severity.WARNING and f.location is not None and f.location.path == __file__
    }


def _setup() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1)).to("cuda")
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def _loss(model: nn.Module, dtype: torch.dtype = torch.float16) -> torch.Tensor:
    with torch.autocast("cuda", dtype=dtype):  # autocast-region
        return model(torch.randn(4, 6, device="cuda")).float().pow(2).mean()


def _correct(steps: int = 3) -> None:
    model, opt = _setup()
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(steps):
        opt.zero_grad()
        scaler.scale(_loss(model)).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()


def _bf16_without_scaler() -> None:
    model, opt = _setup()
    for _ in range(3):
        opt.zero_grad()
        _loss(model, torch.bfloat16).backward()
        opt.step()


def _disabled_scaler_fp32() -> None:
    model, opt = _setup()
    scaler = torch.amp.GradScaler("cuda", enabled=False)
    for _ in range(3):
        opt.zero_grad()
        loss = model(torch.randn(4, 6, device="cuda")).pow(2).mean()
        scaler.scale(loss).backward()
        opt.step()
        scaler.update()


def _half_model_half_input() -> None:
    model = nn.Linear(4, 2).to("cuda").half()
    model(torch.randn(3, 4, device="cuda").half())


def _gan_updates_after_each_backward() -> None:
    model, opt = _setup()
    head = nn.Linear(1, 1).to("cuda")
    opt_head = torch.optim.SGD(head.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(2):
        scaler.scale(_loss(model)).backward()
        scaler.step(opt)
        scaler.update()
        scaler.scale(head(_loss(model).detach().unsqueeze(0)).sum()).backward()
        scaler.step(opt_head)
        scaler.update()


@pytest.mark.parametrize(
    "program",
    [
        _correct,
        _bf16_without_scaler,
        _disabled_scaler_fp32,
        _half_model_half_input,
        _gan_updates_after_each_backward,
    ],
)
def test_correct_mixed_precision_gets_no_warning(program: Callable[[], None]) -> None:
    with watch("cuda") as w:
        program()
    assert _codes(w) == set()


def _backward_inside_autocast() -> None:
    model, opt = _setup()
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(2):
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(torch.randn(4, 6, device="cuda")).float().mean()
            scaler.scale(loss).backward()  # TP307
        scaler.step(opt)
        scaler.update()


def _clip_before_unscale() -> None:
    model, opt = _setup()
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(2):
        opt.zero_grad()
        scaler.scale(_loss(model)).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # TP311
        scaler.step(opt)
        scaler.update()


def _optimizer_step_bypasses_scaler() -> None:
    model, opt = _setup()
    scaler = torch.amp.GradScaler("cuda")
    opt.zero_grad()
    scaler.scale(_loss(model)).backward()
    opt.step()  # TP309


def _step_without_update() -> None:
    model, opt = _setup()
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(2):
        opt.zero_grad()
        scaler.scale(_loss(model)).backward()
        scaler.step(opt)  # TP310


def _unscale_every_micro_batch() -> None:
    model, opt = _setup()
    scaler = torch.amp.GradScaler("cuda")
    for i in range(2):
        scaler.scale(_loss(model) / 2).backward()
        scaler.unscale_(opt)  # TP354
        if i % 2 == 1:
            scaler.step(opt)
            scaler.update()


def _updated_per_optimizer() -> None:
    model, opt = _setup()
    head = nn.Linear(1, 1).to("cuda")
    opt_head = torch.optim.SGD(head.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(2):
        scaler.scale(head(_loss(model).unsqueeze(0)).sum()).backward()
        for optimizer in (opt, opt_head):
            scaler.step(optimizer)  # TP357
            scaler.update()


def _scaled_loss_discarded() -> None:
    model, opt = _setup()
    scaler = torch.amp.GradScaler("cuda")
    opt.zero_grad()
    loss = _loss(model)
    scaler.scale(loss)  # TP314
    loss.backward()
    scaler.step(opt)
    scaler.update()


def _float16_without_scaler() -> None:
    model, opt = _setup()
    opt.zero_grad()
    _loss(model).backward()
    opt.step()


def _bf16_with_scaler() -> None:
    model, opt = _setup()
    scaler = torch.amp.GradScaler("cuda")
    opt.zero_grad()
    scaler.scale(_loss(model, torch.bfloat16)).backward()
    scaler.step(opt)
    scaler.update()


def _half_model_with_scaler() -> None:
    model, _ = _setup()
    model.half()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cuda")
    loss = model(torch.randn(4, 6, device="cuda").half()).float().mean()
    scaler.scale(loss).backward()
    scaler.step(opt)  # TP306


def _half_input_float_model() -> None:
    model, _ = _setup()
    model(torch.randn(4, 6, device="cuda").half())  # TP313


def _deprecated_apis() -> None:
    scaler = torch.cuda.amp.GradScaler()  # TP305
    with torch.cuda.amp.autocast():  # TP305 again
        pass
    del scaler


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        (_backward_inside_autocast, {("TP307", _line("TP307"))}),
        (_clip_before_unscale, {("TP311", _line("TP311"))}),
        (_optimizer_step_bypasses_scaler, {("TP309", _line("TP309"))}),
        (_step_without_update, {("TP310", _line("TP310"))}),
        (_scaled_loss_discarded, {("TP314", _line("TP314"))}),
        (_unscale_every_micro_batch, {("TP354", _line("TP354"))}),
        (_updated_per_optimizer, {("TP357", _line("TP357"))}),
        (_float16_without_scaler, {("TP312", _line("autocast-region"))}),
        (_bf16_with_scaler, {("TP308", _line("autocast-region"))}),
        (_half_model_with_scaler, {("TP306", _line("TP306"))}),
        (_half_input_float_model, {("TP313", _line("TP313"))}),
        (_deprecated_apis, {("TP305", _line("TP305")), ("TP305", _line("TP305 again"))}),
    ],
)
def test_each_amp_mistake_is_reported_at_the_users_line(
    program: Callable[[], None], expected: set[tuple[str, int]]
) -> None:
    deprecated = program is _deprecated_apis
    warns = pytest.warns(FutureWarning) if deprecated else contextlib.nullcontext()
    # torch itself refuses some of these (fp16 unscale, a step without update)
    with watch("cuda") as w, warns, contextlib.suppress(ValueError, RuntimeError, AssertionError):
        program()
    assert _codes(w) == expected


def test_a_layer_built_in_float16_is_named_where_it_was_built() -> None:
    with watch("cuda") as w, contextlib.suppress(ValueError):
        model = nn.Sequential(
            nn.Linear(6, 8),
            nn.PReLU(8, dtype=torch.float16),  # built in float16
            nn.Linear(8, 1),
        ).to("cuda")
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(torch.randn(4, 6, device="cuda")).float().mean()
        scaler.scale(loss).backward()
        scaler.step(opt)  # torch refuses to unscale the float16 gradient
    [found] = [f for f in w.findings if f.code == "TP306"]
    assert [r.line for r in found.related] == [_line("built in float16")]
    assert "1 of 5 parameters are float16" in found.message


@pytest.mark.parametrize("cast", ["half", "to"])
def test_a_model_cast_to_float16_is_named_where_it_was_cast(cast: str) -> None:
    with watch("cuda") as w, contextlib.suppress(ValueError):
        model = nn.Sequential(nn.Linear(6, 8), nn.Linear(8, 1)).to("cuda")
        if cast == "half":
            model.half()  # cast by half
        else:
            model.to(torch.float16)  # cast by to
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        scaler = torch.amp.GradScaler("cuda")
        loss = model(torch.randn(4, 6, device="cuda").half()).float().mean()
        scaler.scale(loss).backward()
        scaler.step(opt)  # torch refuses to unscale the float16 gradients
    [found] = [f for f in w.findings if f.code == "TP306"]
    assert [r.line for r in found.related] == [_line(f"cast by {cast}")]


def test_a_mistake_in_a_step_helper_names_the_line_that_called_it() -> None:
    def clip(scaler: torch.amp.GradScaler, opt: torch.optim.Optimizer) -> None:
        scaler.unscale_(opt)  # unscaled in the helper

    with watch("cuda") as w, contextlib.suppress(RuntimeError):
        model, opt = _setup()
        scaler = torch.amp.GradScaler("cuda")
        for _ in range(2):
            scaler.scale(_loss(model, torch.float16)).backward()
            clip(scaler, opt)  # called at every micro-batch
    [found] = [f for f in w.findings if f.code == "TP354"]
    assert found.location is not None and found.location.line == _line("unscaled in the helper")
    assert [r.line for r in found.related] == [_line("called at every micro-batch")]


def test_backward_inside_autocast_names_where_the_region_was_entered() -> None:
    with watch("cuda") as w:
        model, opt = _setup()
        with torch.autocast("cuda", dtype=torch.float16):  # entered here
            for _ in range(2):
                model(torch.randn(4, 6, device="cuda")).float().sum().backward()
                opt.step()
    found = [f for f in w.findings if f.code == "TP307"]
    assert found and all(_line("entered here") in [r.line for r in f.related] for f in found)


def test_float16_autocast_without_a_scaler_names_where_the_autocast_was_made() -> None:
    with watch("cuda") as w:
        model, opt = _setup()
        ctx = torch.autocast("cuda", dtype=torch.float16)  # made before the loop
        for _ in range(2):
            with ctx:  # entered at every step
                loss = model(torch.randn(4, 6, device="cuda")).float().sum()
            loss.backward()
            opt.step()
    [found] = [f for f in w.findings if f.code == "TP312"]
    assert found.location is not None and found.location.line == _line("entered at every step")
    assert [r.line for r in found.related] == [_line("made before the loop")]


def test_a_scaler_over_bfloat16_autocast_names_where_the_scaler_was_made() -> None:
    with watch("cuda") as w:
        model, opt = _setup()
        scaler = torch.amp.GradScaler("cuda")  # the scaler bfloat16 does not need
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(torch.randn(4, 6, device="cuda")).float().sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    [found] = [f for f in w.findings if f.code == "TP308"]
    assert _line("the scaler bfloat16 does not need") in [r.line for r in found.related]


def test_the_patches_are_removed_after_the_watch() -> None:
    originals = (torch.amp.GradScaler.step, torch.autograd.backward, nn.utils.clip_grad_norm_)
    with watch("cuda"):
        assert torch.autograd.backward is not originals[1]
    assert (torch.amp.GradScaler.step, torch.autograd.backward, nn.utils.clip_grad_norm_) == (
        originals
    )
