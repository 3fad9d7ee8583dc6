"""Shapes `check` follows since blind set j (2026-11-26): each program is small, each mistake
sits where the set's programs had it (a helper, a method, a module constant), and each has a
correct variant that must stay quiet."""

from __future__ import annotations

import textwrap

from torchport.analyze.engine import analyze


def _lines(source: str, code: str) -> list[int]:
    text = textwrap.dedent(source)
    return [
        f.location.line
        for f in analyze(text, "prog.py", lambda c: True)
        if f.code == code and f.location is not None
    ]


def _line_of(source: str, marker: str) -> int:
    lines = textwrap.dedent(source).splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


PARAMETER_ON_DEVICE = """
import torch
from torch import nn


class DualEncoder(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.proj = nn.Linear(8, 8).to(device)
        self.scale = nn.Parameter(torch.tensor(2.0{where}))

    def forward(self, x):
        h = self.proj(x)
        scale = self.scale.exp()
        return scale * h  # meet


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = DualEncoder(device)
    x = torch.randn(4, 8, device=device)
    for _ in range(3):
        model(x).sum().backward()


main()
"""


def test_a_parameter_made_on_the_device_is_there_though_its_module_is_never_moved() -> None:
    assert _lines(PARAMETER_ON_DEVICE.format(where=", device=device"), "TP150") == []
    # made on the host, in a module nobody moves: it meets the moved layer's output
    bad = PARAMETER_ON_DEVICE.format(where="")
    assert _lines(bad, "TP150") == [_line_of(bad, "# meet")]


ALL_GATHER = """
import torch
import torch.distributed as dist


def merge(count, mean, device):
    stats = torch.tensor([count, mean]{where})  # made
    gathered = [torch.empty_like(stats) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, stats)
    return torch.stack(gathered)


def main(device):
    dist.init_process_group("nccl")
    merge(3.0, 0.5, device)
"""


def test_the_tensor_all_gather_sends_is_its_second_argument() -> None:
    bad = ALL_GATHER.format(where="")
    [line] = _lines(bad, "TP406")
    assert line == _line_of(bad, "dist.all_gather(")
    assert _lines(ALL_GATHER.format(where=", device=device"), "TP406") == []


FEW_STATS = """
import torch


def send(count, mean, m2, device):
    return torch.tensor([count, mean, m2], dtype=torch.float64, device=device)


def big(n, device):
    return torch.zeros(n, 1024, dtype=torch.float64, device=device)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    send(1.0, 2.0, 3.0, device)
    big(8, device)
"""


def test_a_few_float64_statistics_are_a_suggestion_and_a_float64_array_a_warning() -> None:
    findings = analyze(textwrap.dedent(FEW_STATS), "prog.py", lambda c: True)
    severities = {
        f.location.line: f.severity.name.lower()
        for f in findings
        if f.code == "TP302" and f.location is not None
    }
    assert severities == {
        _line_of(FEW_STATS, "torch.tensor([count"): "info",
        _line_of(FEW_STATS, "torch.zeros(n"): "warning",
    }


WRAPPED_IN_HELPER = """
import os
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def build(local_rank):
    model = nn.Linear(4, 2){early}
    model = DDP(model, device_ids=[local_rank])
    return model


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank)
    model = build(local_rank){late}
"""


def test_a_model_wrapped_in_a_helper_and_moved_by_its_caller_is_wrapped_before_moved() -> None:
    bad = WRAPPED_IN_HELPER.format(early="", late=".to(device)")
    assert _lines(bad, "TP411") == [_line_of(bad, "DDP(model")]
    good = WRAPPED_IN_HELPER.format(early=".to(local_rank)", late="")
    assert _lines(good, "TP411") == []


SEED_BEFORE_DEVICE = """
import os
import torch
import torch.distributed as dist


def setup(seed):
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group(backend="nccl"){first}
    seed_t = torch.tensor([seed], device="cuda")
    dist.broadcast(seed_t, src=0){then}
    return int(seed_t.item())
"""


def test_a_tensor_on_the_bare_cuda_device_before_set_device_is_on_gpu_zero() -> None:
    pick = "\n    torch.cuda.set_device(local_rank)"
    bad = SEED_BEFORE_DEVICE.format(first="", then=pick)
    assert _lines(bad, "TP412") == [_line_of(bad, "seed_t = ")]
    good = SEED_BEFORE_DEVICE.format(first=pick, then="")
    assert _lines(good, "TP412") == []


INDEX_IN_CONSTANT = """
import torch
import torch.distributed as dist

CKPT_DEVICE = "cuda:0" if torch.cuda.is_available() else "cpu"


def load(path):
    return torch.load(path, map_location=CKPT_DEVICE)


def main(path):
    {start}
    load(path)
"""


def test_a_fixed_gpu_index_anywhere_in_a_distributed_program_is_named() -> None:
    bad = INDEX_IN_CONSTANT.format(start='dist.init_process_group("nccl")')
    assert _lines(bad, "TP110") == [_line_of(bad, "CKPT_DEVICE = ")]
    # one process, one GPU: a constant is not a device argument, and nothing is wrong
    assert _lines(INDEX_IN_CONSTANT.format(start="pass"), "TP110") == []


INTEGER_MAX_POOL = """
import torch
import torch.nn.functional as F


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ids = torch.randint(0, 4, (2, 1, 8, 8), device=device)
    return F.max_pool2d(ids{cast}, 3, stride=1, padding=1)
"""


def test_max_pooling_an_integer_tensor_on_the_device_has_no_cuda_kernel() -> None:
    bad = INTEGER_MAX_POOL.format(cast="")
    assert _lines(bad, "TP321") == [_line_of(bad, "F.max_pool2d(ids")]
    assert _lines(INTEGER_MAX_POOL.format(cast=".float()"), "TP321") == []


CPU_IN_FORWARD = """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 8)

    def forward(self, batch):
        h = self.emb(batch.ids)
        starts = (batch.positions == 0){read}
        return h, starts


class Batch:
    def __init__(self, ids, positions):
        self.ids, self.positions = ids, positions

    def to(self, device):
        return Batch(self.ids.to(device), self.positions.to(device))


def serve(model, batches, device):
    model = model.to(device)
    outs = []
    for b in batches:
        outs.append(model(b.to(device)))
    return outs


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batches = [Batch(torch.randint(0, 100, (6,)), torch.arange(6)) for _ in range(4)]
    serve(Encoder(), batches, device)


main()
"""


def test_a_copy_to_the_host_in_forward_of_a_value_followed_to_the_device_is_a_sync() -> None:
    bad = CPU_IN_FORWARD.format(read=".cpu().nonzero()")
    assert _lines(bad, "TP205") == [_line_of(bad, "starts = ")]
    assert _lines(CPU_IN_FORWARD.format(read=".nonzero()"), "TP205") == []


STEP_HELPER = """
import torch


def global_norm(params):
    return torch.sqrt(sum(p.grad.pow(2).sum() for p in params if p.grad is not None))


class Trainer:
    def __init__(self, model, device):
        self.model = model.to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.scaler = torch.amp.GradScaler("cuda")

    def backward(self, loss):
        self.scaler.scale(loss).backward()
        self.finish()

    def finish(self):{unscale}
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.norm = global_norm(self.model.parameters())
        self.scaler.step(self.opt)
        self.scaler.update()
"""


def test_an_optimizer_step_helper_clipping_or_reading_scaled_gradients() -> None:
    bad = STEP_HELPER.format(unscale="")
    assert _lines(bad, "TP311") == [
        _line_of(bad, "clip_grad_norm_"),
        _line_of(bad, "self.norm = "),
    ]
    good = STEP_HELPER.format(unscale="\n        self.scaler.unscale_(self.opt)")
    assert _lines(good, "TP311") == []
