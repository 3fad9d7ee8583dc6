"""`run` reports library calls that are porting mistakes by themselves (runtime/apis.py) and
loss targets of the wrong dtype (runtime/losses.py) at the user's line, and stays quiet about
the correct forms of the same calls."""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import rnn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from torchport.runtime import watch

HERE = Path(__file__).read_text(encoding="utf-8").splitlines()


def _line(marker: str) -> int:
    [line] = [n for n, text in enumerate(HERE, 1) if text.rstrip().endswith(f"# {marker}")]
    return line


def _codes(w: watch) -> set[tuple[str, int]]:
    return {
        (f.code, f.location.line)
        for f in w.findings
        if f.location is not None and f.location.path == __file__
    }


def _float_class_target() -> None:
    logits = torch.randn(5, 3, device="cuda")
    F.cross_entropy(logits, torch.randint(0, 3, (5,), device="cuda").float())  # TP304 ce


def _int_bce_target() -> None:
    criterion = nn.BCEWithLogitsLoss()
    logits, y = torch.randn(5, 1, device="cuda"), torch.ones(5, 1, device="cuda").long()
    criterion(logits, y)  # TP304 bce


def _int32_nll_target() -> None:
    logp = torch.randn(4, 3, device="cuda").log_softmax(1)
    F.nll_loss(logp, torch.zeros(4, dtype=torch.int32, device="cuda"))  # TP304 nll


def _correct_targets() -> None:
    logits = torch.randn(5, 3, device="cuda")
    F.cross_entropy(logits, torch.randint(0, 3, (5,), device="cuda"))
    F.cross_entropy(logits, torch.softmax(torch.randn(5, 3, device="cuda"), 1))  # probabilities
    nn.MSELoss()(torch.randn(5, device="cuda"), torch.randn(5, device="cuda"))
    F.binary_cross_entropy_with_logits(logits, torch.rand(5, 3, device="cuda"))


def _checkpoint(map_location: str | None) -> None:
    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    torch.save(nn.Linear(2, 2).to("cuda").state_dict(), path)
    if map_location is None:
        torch.load(path)  # TP107
    else:
        torch.load(path, map_location=map_location)


def _pin_in_loop() -> None:
    model = nn.Linear(3, 1).to("cuda")
    for x in torch.randn(4, 2, 3):
        model(x.pin_memory().to("cuda", non_blocking=True))  # TP203


def _pin_before_training() -> None:
    # pinned once, in a list built before the loop: no forward pass between the pins
    batches = [x.pin_memory() for x in torch.randn(4, 2, 3)]
    model = nn.Linear(3, 1).to("cuda")
    for x in batches:
        model(x.to("cuda", non_blocking=True))


def _loader_pins() -> None:
    loader = DataLoader(TensorDataset(torch.randn(8, 3)), batch_size=2, pin_memory=True)
    for (x,) in loader:
        x.to("cuda", non_blocking=True)


def _empty_cache_in_loop() -> None:
    model = nn.Linear(3, 1).to("cuda")
    for _ in range(4):
        model(torch.randn(2, 3, device="cuda")).sum().backward()
        torch.cuda.empty_cache()  # TP207


def _packed(lengths_device: str) -> None:
    padded, lengths = torch.randn(2, 3, 4, device="cuda"), torch.tensor([3, 1])
    rnn.pack_padded_sequence(padded, lengths.to(lengths_device), batch_first=True)  # TP116


def _embedding(ids: torch.Tensor) -> None:
    embed = nn.Embedding(10, 4).to("cuda")
    embed(ids.to("cuda"))  # TP352


def _data_parallel() -> None:
    nn.DataParallel(nn.Linear(2, 2)).to("cuda")  # TP401


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        (_float_class_target, {("TP304", _line("TP304 ce"))}),
        (_int_bce_target, {("TP304", _line("TP304 bce"))}),
        (_int32_nll_target, {("TP304", _line("TP304 nll"))}),
        (_correct_targets, set()),
        (lambda: _checkpoint(None), {("TP107", _line("TP107"))}),
        (lambda: _checkpoint("cpu"), set()),
        (_pin_in_loop, {("TP203", _line("TP203"))}),
        (_pin_before_training, set()),
        (_loader_pins, set()),
        (_empty_cache_in_loop, {("TP207", _line("TP207"))}),
        (_data_parallel, {("TP401", _line("TP401"))}),
        (lambda: _packed("cuda"), {("TP116", _line("TP116"))}),
        (lambda: _packed("cpu"), set()),
        (lambda: _embedding(torch.floor(torch.rand(2, 3) * 10)), {("TP352", _line("TP352"))}),
        (lambda: _embedding(torch.randint(0, 10, (2, 3))), set()),
    ],
)
def test_calls_and_loss_targets_are_judged_at_the_users_line(
    program: Callable[[], None], expected: set[tuple[str, int]]
) -> None:
    # torch refuses the wrong targets after torchport has seen them
    with watch("cuda") as w, contextlib.suppress(RuntimeError):
        program()
    assert _codes(w) == expected


def test_a_target_cast_from_integers_names_the_line_of_the_cast() -> None:
    with watch("cuda") as w, contextlib.suppress(RuntimeError):
        batch = {"x": torch.randn(4, 3), "y": torch.randint(0, 3, (4,))}
        moved = {k: v.to("cuda").half() for k, v in batch.items()}  # labels cast too
        logits = nn.Linear(3, 3).to("cuda").half()(moved["x"])
        F.cross_entropy(logits, moved["y"])
    [found] = [f for f in w.findings if f.code == "TP304"]
    assert [r.line for r in found.related] == [_line("labels cast too")]


def test_set_default_tensor_type_is_reported_and_its_effect_undone_here() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own deprecation warning
        with watch("cuda") as w:
            torch.set_default_tensor_type(torch.DoubleTensor)  # TP113
        torch.set_default_dtype(torch.float32)
    assert _codes(w) == {("TP113", _line("TP113"))}


def _ddp(set_device: bool) -> watch:
    store = os.path.join(tempfile.mkdtemp(), "store")
    with watch("cuda") as w:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
        try:
            if set_device:
                torch.cuda.set_device(0)
            model = nn.Linear(3, 1).to("cuda")
            nn.parallel.DistributedDataParallel(model)  # TP402
        finally:
            dist.destroy_process_group()
    return w


@pytest.mark.parametrize("set_device", [False, True])
def test_ddp_without_device_ids_is_reported_unless_the_process_chose_its_device(
    set_device: bool,
) -> None:
    expected = set() if set_device else {("TP402", _line("TP402"))}
    assert _codes(_ddp(set_device)) == expected


def _drawn_from_a_seeded_host_generator() -> None:
    # a reproducible CPU stream: drawing it on the device would need a device generator
    model = nn.Linear(4, 1).to("cuda")
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        model(torch.randn(2, 4, generator=g).to("cuda")).sum().backward()


def _numpy_of_device_tensor() -> None:
    torch.randn(3, device="cuda").numpy()  # TP108


def _generated_on_host_each_step() -> None:
    model = nn.Linear(4, 1).to("cuda")
    for _ in range(3):
        model(torch.randn(2, 4).to("cuda")).sum().backward()  # TP104


def _generated_on_host_once() -> None:
    model = nn.Linear(4, 1).to("cuda")
    fixed = torch.randn(2, 4).to("cuda")
    for _ in range(3):
        model(fixed).sum().backward()


def _masked_in_loop() -> None:
    model = nn.Linear(4, 1).to("cuda")
    for _ in range(4):
        x = torch.randn(8, 4, device="cuda")
        model(x[x[:, 0] > 0]).sum().backward()  # TP206


def _range_over_a_device_count_in_loop() -> None:
    model = nn.Linear(4, 1).to("cuda")
    for _ in range(4):
        x = torch.randn(8, 4, device="cuda")
        for start in range(0, (x[:, 0] > -9).sum(), 4):  # TP206 range
            model(x[start : start + 4]).sum().backward()


def _unique_in_loop() -> None:
    model = nn.Linear(4, 1).to("cuda")
    for _ in range(4):
        labels = torch.randint(0, 3, (8,), device="cuda")
        classes = torch.unique(labels)  # TP206 unique
        model(torch.randn(8, 4, device="cuda")).sum().div(len(classes)).backward()


def _unpinned_loader() -> None:
    loader = DataLoader(TensorDataset(torch.randn(8, 3)), batch_size=2)  # TP201
    for (x,) in loader:
        x.to("cuda")


def _unpinned_once_or_by_choice() -> None:
    triplet = next(iter(DataLoader(TensorDataset(*torch.randn(3, 8, 3)), batch_size=8)))
    [t.to("cuda") for t in triplet]  # one validation batch of three tensors: not worth pinning
    chosen = DataLoader(TensorDataset(torch.randn(8, 3)), batch_size=2, pin_memory=False)
    for (y,) in chosen:
        y.to("cuda")


def _sampler_epochs(set_epoch: bool) -> None:
    dataset = TensorDataset(torch.randn(8, 2))
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0)  # TP403
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    for epoch in range(2):
        if set_epoch:
            sampler.set_epoch(epoch)
        for _ in loader:
            pass


def _peek_then_set_epoch() -> None:
    # pytorch/examples' DDP tutorial: the first batch is peeked at before set_epoch each epoch
    dataset = TensorDataset(torch.randn(8, 2))
    loader = DataLoader(dataset, batch_size=4, sampler=DistributedSampler(dataset, 1, 0))
    for epoch in range(2):
        next(iter(loader))
        loader.sampler.set_epoch(epoch)  # type: ignore[attr-defined]
        for _ in loader:
            pass


def _sampler_unused() -> None:
    dataset = TensorDataset(torch.randn(8, 2))
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0)  # TP407
    for _ in DataLoader(dataset, batch_size=4, shuffle=True):
        pass
    del sampler


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        (_numpy_of_device_tensor, {("TP108", _line("TP108"))}),
        (_generated_on_host_each_step, {("TP104", _line("TP104"))}),
        (_generated_on_host_once, set()),
        (_drawn_from_a_seeded_host_generator, set()),
        (_masked_in_loop, {("TP206", _line("TP206"))}),
        (_unique_in_loop, {("TP206", _line("TP206 unique"))}),
        (_range_over_a_device_count_in_loop, {("TP206", _line("TP206 range"))}),
        (_unpinned_loader, {("TP201", _line("TP201"))}),
        (_unpinned_once_or_by_choice, set()),
        (_loader_pins, set()),
        (lambda: _sampler_epochs(set_epoch=False), {("TP403", _line("TP403"))}),
        (lambda: _sampler_epochs(set_epoch=True), set()),
        (_peek_then_set_epoch, set()),
        (_sampler_unused, {("TP407", _line("TP407"))}),
    ],
)
def test_data_and_sync_mistakes_are_judged_at_the_users_line(
    program: Callable[[], None], expected: set[tuple[str, int]]
) -> None:
    with watch("cuda") as w, contextlib.suppress(TypeError):  # .numpy() of a device tensor
        program()
    assert _codes(w) == expected


def _running_total(as_tensor: bool) -> None:
    model = nn.Linear(3, 1).to("cuda")
    total = 0.0
    for _ in range(4):
        loss = model(torch.randn(2, 3, device="cuda")).pow(2).mean()
        loss.backward()
        total += loss if as_tensor else loss.detach()  # TP209


def _losses_summed_within_each_step() -> None:
    heads = [nn.Linear(3, 1).to("cuda") for _ in range(4)]
    x = torch.randn(2, 3, device="cuda")
    for _ in range(3):
        loss = torch.zeros((), device="cuda")
        for head in heads:
            loss = loss + head(x).pow(2).mean()
        loss.backward()


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        (lambda: _running_total(as_tensor=True), {("TP209", _line("TP209"))}),
        (lambda: _running_total(as_tensor=False), set()),
        (_losses_summed_within_each_step, set()),
    ],
)
def test_a_running_total_of_graph_carrying_losses_is_reported(
    program: Callable[[], None], expected: set[tuple[str, int]]
) -> None:
    with watch("cuda") as w:
        program()
    assert _codes(w) == expected


def test_a_mask_index_sync_suggests_a_fixed_shape() -> None:
    with watch("cuda") as w:
        _masked_in_loop()
    [finding] = [f for f in w.findings if f.code == "TP206"]
    assert finding.fix is not None and "torch.where" in finding.fix.title


class _Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = [nn.Linear(4, 2) for _ in range(2)]  # a plain list: never moved
        self.scale = torch.ones(2)  # a plain attribute: never moved

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.heads[0](x)


class _Scaled(_Heads):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


@pytest.mark.parametrize(
    ("module", "assigned"),
    [(_Heads, "a plain list: never moved"), (_Scaled, "a plain attribute: never moved")],
)
def test_a_device_error_names_the_assignment_that_keeps_a_tensor_out_of_to(
    module: type[nn.Module], assigned: str
) -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError, match="same device"):
        module().to("cuda")(torch.randn(3, 2 if module is _Scaled else 4, device="cuda"))
    [finding] = [f for f in w.findings if f.code == "TP150"]
    lines = {r.line for r in finding.related}
    assert _line(assigned) in lines


def test_a_device_error_names_the_copy_to_the_device_that_was_not_kept() -> None:
    with watch("cuda") as w, pytest.raises(RuntimeError, match="same device"):
        model = nn.Linear(4, 2).to("cuda")
        x = torch.randn(3, 4)
        x.to("cuda")  # result discarded
        model(x)
    [finding] = [f for f in w.findings if f.code == "TP150"]
    assert _line("result discarded") in {r.line for r in finding.related}
    assert "a copy that was not kept" in finding.message


class _PositionalTable(nn.Module):
    def __init__(self, buffer: bool) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        table = torch.randn(1, 4)
        if buffer:
            self.register_buffer("table", table, persistent=False)
        else:
            self.table = table  # a plain attribute: model.to() leaves it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) + self.table.to(x.device)  # copied at every forward


@pytest.mark.parametrize("buffer", [False, True])
def test_a_plain_tensor_attribute_copied_in_every_forward_is_tp104(buffer: bool) -> None:
    with watch("cuda") as w:
        model = _PositionalTable(buffer).to("cuda")
        for _ in range(4):
            model(torch.randn(2, 4, device="cuda"))
    found = [f for f in w.findings if f.code == "TP104"]
    if buffer:
        assert found == []
        return
    [one] = found
    assert one.location is not None and one.location.line == _line("copied at every forward")
    assert [r.line for r in one.related] == [_line("a plain attribute: model.to() leaves it")]


@pytest.mark.parametrize("drawn_on", ["numpy", "device"])
def test_numpy_indices_into_a_device_tensor_at_every_step_are_tp104(drawn_on: str) -> None:
    numpy = pytest.importorskip("numpy")
    with watch("cuda") as w:
        buffer = torch.randn(64, 4, device="cuda")
        for _ in range(4):
            if drawn_on == "numpy":
                picks = numpy.random.choice(64, size=8, replace=False)
            else:
                picks = torch.randperm(64, device="cuda")[:8]
            buffer[picks].sum()  # indexed here
    found = [f for f in w.findings if f.code == "TP104"]
    expected = [_line("indexed here")] if drawn_on == "numpy" else []
    assert [f.location.line for f in found if f.location is not None] == expected


def test_a_simulated_default_device_reaches_the_layers_a_model_builds() -> None:
    with watch("cuda") as w:
        torch.set_default_device("cuda")
        try:
            layer = nn.Linear(3, 2)
            out = layer(torch.randn(4, 3))
        finally:
            torch.set_default_device(None)
        assert layer.weight.device == torch.device("cuda", 0) == out.device
        assert torch.get_default_device().type == "cpu"
    assert w.findings == []


@pytest.mark.parametrize("chose_gpu", [False, True])
def test_a_default_cuda_device_in_a_rank_that_never_chose_its_gpu_is_tp418(
    monkeypatch: pytest.MonkeyPatch, chose_gpu: bool
) -> None:
    for name, value in {
        "RANK": "0", "WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29800 + os.getpid() % 90),
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    with watch("cuda") as w:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        try:
            if chose_gpu:
                torch.cuda.set_device(0)
            torch.set_default_device("cuda")  # every rank on GPU 0
            torch.set_default_device(None)
        finally:
            dist.destroy_process_group()
    found = [f.location.line for f in w.findings if f.code == "TP418" and f.location is not None]
    assert found == ([] if chose_gpu else [_line("every rank on GPU 0")])


def _one_epoch(loader: DataLoader[tuple[torch.Tensor, ...]]) -> None:
    for _ in loader:  # a pass over the loader
        pass


def test_a_sampler_without_set_epoch_names_where_its_loader_was_iterated() -> None:
    with watch("cuda") as w:
        dataset = TensorDataset(torch.randn(8, 2))
        sampler = DistributedSampler(dataset, num_replicas=1, rank=0)
        loader = DataLoader(dataset, batch_size=4, sampler=sampler)
        for _ in range(2):
            _one_epoch(loader)  # the epoch loop's call
    [found] = [f for f in w.findings if f.code == "TP403"]
    lines = [r.line for r in found.related]
    assert lines == [_line("a pass over the loader"), _line("the epoch loop's call")]
