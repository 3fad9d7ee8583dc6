"""Shapes `check` follows since blind set j (2026-11-26): each program is small, each mistake
sits where the set's programs had it (a helper, a method, a module constant), and each has a
correct variant that must stay quiet."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

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


HALF_POLICY = """
import torch
from torch import nn


class Trainer:
    def __init__(self, policy, reference, device):
        self.model_dtype = torch.float16 if device.type == "cuda" else torch.float32
        self.policy = policy.to(device=device, dtype={policy_dtype})
        self.reference = reference.to(device=device, dtype=self.model_dtype).eval()
        self.optimizer = torch.optim.SGD(self.policy.parameters(), lr=0.1)
        self.scaler = torch.amp.GradScaler("cuda")


Trainer(nn.Linear(4, 2), nn.Linear(4, 2), torch.device("cuda"))
"""


def test_a_trained_model_cast_to_a_dtype_kept_on_self_and_a_frozen_copy_beside_it() -> None:
    bad = HALF_POLICY.format(policy_dtype="self.model_dtype")
    assert _lines(bad, "TP306") == [_line_of(bad, "self.policy = ")]
    # only the frozen reference is float16: the scaler steps float32 weights
    assert _lines(HALF_POLICY.format(policy_dtype="torch.float32"), "TP306") == []


CHOSEN_AUTOCAST = """
from contextlib import nullcontext

import torch
from torch import nn


def train(device, options):
    model = nn.Linear(8, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ctx = nullcontext() if device.type == "cpu" else torch.autocast(device_type="cuda"{extra})
    for _ in range(3):
        with ctx:
            loss = model(torch.randn(4, 8, device=device)).sum()
        loss.backward()
        opt.step()
"""


def test_an_autocast_chosen_by_a_conditional_is_followed_and_kwargs_hide_its_dtype() -> None:
    bad = CHOSEN_AUTOCAST.format(extra="")
    assert _lines(bad, "TP312") == [_line_of(bad, "ctx = ")]
    assert _lines(CHOSEN_AUTOCAST.format(extra=", **options"), "TP312") == []
    assert _lines(CHOSEN_AUTOCAST.format(extra=", dtype=torch.bfloat16"), "TP312") == []


EAGER_OPTIMIZER = """
import torch
from torch import nn


class Controller:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.{name}(model.parameters(), lr=lr)

    def set_device(self, device):
        self.model.to(device){reload}
"""


def test_adagrad_built_before_its_model_moves_keeps_its_state_on_the_cpu() -> None:
    bad = EAGER_OPTIMIZER.format(name="Adagrad", reload="")
    assert _lines(bad, "TP120") == [_line_of(bad, "self.optimizer = ")]
    # Adam makes its state at the first step, on the parameters' device by then
    assert _lines(EAGER_OPTIMIZER.format(name="Adam", reload=""), "TP120") == []
    # loading the state casts it to the parameters' device
    reload = "\n        self.optimizer.load_state_dict(self.optimizer.state_dict())"
    assert _lines(EAGER_OPTIMIZER.format(name="Adagrad", reload=reload), "TP120") == []


THRESHOLD = """
import torch
from torch import nn


def hits(preds, threshold=0.5):
    if isinstance(threshold, float):
        threshold = torch.tensor({made}, dtype=preds.dtype)
    return (preds > threshold).float().sum()  # compared


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 1).to(device)
    for _ in range(3):
        hits(model(torch.randn(8, 4, device=device)))


main()
"""


def test_a_number_made_a_one_element_tensor_is_not_a_scalar_beside_the_device() -> None:
    bad = THRESHOLD.format(made="[threshold]")
    assert _lines(bad, "TP150") == [_line_of(bad, "# compared")]
    # a 0-dim tensor may meet tensors on any device
    assert _lines(THRESHOLD.format(made="threshold"), "TP150") == []


FILL_LIMIT = """
import torch


def mask_scores(scores, pad, value={value}):
    return scores.masked_fill(pad, value)


def main(device):
    with torch.autocast("cuda", dtype=torch.float16):
        scores = torch.randn(2, 4, device=device)
        mask_scores(scores, scores > 0)
"""


def test_float32s_lowest_value_does_not_fit_a_float16_fill() -> None:
    bad = FILL_LIMIT.format(value="torch.finfo(torch.float32).min")
    assert _lines(bad, "TP317") == [_line_of(bad, "scores.masked_fill")]
    assert _lines(FILL_LIMIT.format(value="-1e4"), "TP317") == []


CONFIG_EPS = """
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Args:
    lr: float = 1e-3
    adam_eps: float = {eps}


def build(args, device):
    model = nn.Linear(4, 2).half().to(device)
    return torch.optim.Adam(model.parameters(), lr=args.lr, eps=args.adam_eps)
"""


def test_an_optimizer_eps_read_from_a_config_class_default() -> None:
    bad = CONFIG_EPS.format(eps="1e-8")
    assert _lines(bad, "TP356") == [_line_of(bad, "return torch.optim.Adam")]
    assert _lines(CONFIG_EPS.format(eps="1e-4"), "TP356") == []


MOVER = """
import numpy as np
import torch


def move(data, device):
    if isinstance(data, torch.Tensor):
        return data.to(device, non_blocking=True)
    return {{k: move(v, device) for k, v in data.items()}}


def save(probs, path):
    host = move({{"probs": probs}}, "cpu"){sync}
    np.save(path, host["probs"].numpy())
"""


def test_a_generic_non_blocking_mover_called_for_the_host_is_an_async_copy() -> None:
    bad = MOVER.format(sync="")
    [finding] = [
        f for f in analyze(textwrap.dedent(bad), "prog.py", lambda c: True) if f.code == "TP208"
    ]
    assert finding.location is not None
    assert finding.location.line == _line_of(bad, "np.save(")
    copied, inside = _line_of(bad, 'move({"probs"'), _line_of(bad, "non_blocking=True")
    assert [r.line for r in finding.related] == [copied, inside]
    good = MOVER.format(sync="\n    torch.cuda.synchronize()")
    assert _lines(good, "TP208") == []


PINNING = """
import torch
from torch.utils.data import DataLoader, TensorDataset


def train(model, device):
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, num_workers=2, pin_memory=False)
    for x, y in loader:
        x = x.to(device{flag})
        model(x).sum().backward()
"""


def test_pin_memory_false_beside_non_blocking_copies() -> None:
    bad = PINNING.format(flag=", non_blocking=True")
    assert _lines(bad, "TP201") == [_line_of(bad, "pin_memory=False")]
    # without asynchronous copies, not pinning is the program's choice
    assert _lines(PINNING.format(flag=""), "TP201") == []


TASK_MASKS = """
import torch
from torch import nn


class MultiTaskLoss(nn.Module):
    def forward(self, preds, targets, ids, wanted):
        total = preds.new_zeros(())
        for column in range(preds.shape[1]):
            mask = {mask}
            err = (preds[:, column] - targets[:, column]).pow(2)
            total = total + err[mask].mean()
        return total


def train(model, loader, device):
    criterion = MultiTaskLoss()
    model.to(device)
    for x, y, ids in loader:
        x, y, ids = x.to(device), y.to(device), ids.to(device)
        criterion(model(x), y, ids, torch.tensor([1, 2], device=device)).backward()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batches = [(torch.randn(8, 4), torch.randn(8, 3), torch.randint(0, 3, (8,)))] * 4
    train(nn.Linear(4, 3), batches, device)


main()
"""


def test_indexing_with_a_mask_from_isin_syncs() -> None:
    bad = TASK_MASKS.format(mask="torch.isin(ids, wanted)")
    assert _lines(bad, "TP206") == [_line_of(bad, "err[mask]")]
    assert _lines(TASK_MASKS.format(mask="torch.arange(4, device=ids.device)"), "TP206") == []


INDEX_TABLE = """
import torch
from torch import nn


class Interaction(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.pairs = torch.triu_indices(n, n, offset=1)

    def forward(self, x):
        idx = self.pairs.to(x.device)
        return x[:, idx[0], idx[1]]
"""


def test_an_index_table_made_by_triu_indices_is_a_plain_tensor_attribute() -> None:
    assert _lines(INDEX_TABLE, "TP105") == [_line_of(INDEX_TABLE, "self.pairs = ")]


SPECTROGRAM = """
import torch
from torch import nn


class Frontend(nn.Module):
    def forward(self, wav):
        return torch.stft(wav, 64, window=torch.hann_window(64{where}), return_complex=True)
"""


def test_a_window_function_in_forward_is_a_factory_on_the_host() -> None:
    bad = SPECTROGRAM.format(where="")
    assert _lines(bad, "TP103") == [_line_of(bad, "torch.hann_window")]
    assert _lines(SPECTROGRAM.format(where=", device=wav.device"), "TP103") == []


ROTARY = """
import torch
from torch import nn


class Rotary(nn.Module):
    def __init__(self, dim, length):
        super().__init__()
        freqs = torch.outer(torch.arange(length).float(), torch.rand(dim))
        {store}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
rotary = Rotary(8, 16).to(device)
"""


def test_a_table_computed_from_host_tensors_is_a_plain_tensor_attribute() -> None:
    bad = ROTARY.format(store="self.cos_cached = freqs.cos()[None, :, :]")
    assert _lines(bad, "TP105") == [_line_of(bad, "self.cos_cached")]
    good = ROTARY.format(store='self.register_buffer("cos_cached", freqs.cos()[None, :, :])')
    assert _lines(good, "TP105") == []


DEFAULT_GROUP = """
import os
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("nccl")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return device
"""


def test_an_nccl_group_without_set_device_names_the_device_every_rank_takes() -> None:
    [finding] = [
        f
        for f in analyze(textwrap.dedent(DEFAULT_GROUP), "prog.py", lambda c: True)
        if f.code == "TP412"
    ]
    assert [r.line for r in finding.related] == [_line_of(DEFAULT_GROUP, "device = ")]


STATS_ON_DEVICE = """
import torch
import torch.distributed as dist


def setup():
    if torch.cuda.is_available():
        device = torch.device("cuda", 0)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device


def gather(stats, device):
    packed = torch.tensor(stats, dtype=torch.float32{where})
    dist.all_reduce(packed)
    return packed


def main():
    device = setup()
    return gather([1.0, 2.0], device)
"""


def test_a_tensor_made_with_the_processes_device_may_go_to_nccl() -> None:
    assert _lines(STATS_ON_DEVICE.format(where=", device=device"), "TP406") == []
    bad = STATS_ON_DEVICE.format(where="")
    assert _lines(bad, "TP406") == [_line_of(bad, "dist.all_reduce")]


OPTION_EPS = """
import argparse

import torch
from torch import nn


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--adam_epsilon", type=float, default={eps})
    args = parser.parse_args(argv)
    model = nn.Linear(4, 2).to("cuda", dtype=torch.float16)
    return torch.optim.AdamW(model.parameters(), eps=args.adam_epsilon)
"""


def test_an_optimizer_eps_read_from_a_command_line_default() -> None:
    bad = OPTION_EPS.format(eps="1e-8")
    assert _lines(bad, "TP356") == [_line_of(bad, "return torch.optim.AdamW")]
    assert _lines(OPTION_EPS.format(eps="1e-4"), "TP356") == []


WHERE_FILL = """
import torch


def attend(scores, mask):
    big_neg = {value}
    return torch.softmax(torch.where(mask, scores, big_neg), dim=-1)


def main(device):
    with torch.autocast("cuda", dtype=torch.float16):
        scores = torch.randn(2, 4, device=device)
        return attend(scores, scores > 0)
"""


def test_a_torch_where_fill_value_float16_cannot_hold() -> None:
    bad = WHERE_FILL.format(value="-2.3819763e38")
    assert _lines(bad, "TP317") == [_line_of(bad, "torch.where(")]
    assert _lines(WHERE_FILL.format(value="-1e4"), "TP317") == []


RANK_ZERO_METRIC = """
import torch
import torch.distributed as dist


class DiceMeter:
    def __init__(self):
        self.total = torch.zeros(2)

    def aggregate(self):
        buf = self.total.clone()
        dist.all_reduce(buf)
        return buf


def validate(model, meter):
    return meter.aggregate()


def main(model):
    dist.init_process_group("nccl")
    meter = DiceMeter()
    {guard}
        validate(model, meter)
    dist.barrier()
"""


def test_a_collective_in_a_method_of_an_object_handed_to_rank_zero_only_code() -> None:
    bad = RANK_ZERO_METRIC.format(guard="if dist.get_rank() == 0:")
    assert _lines(bad, "TP416") == [_line_of(bad, "dist.all_reduce(buf)")]
    assert _lines(RANK_ZERO_METRIC.format(guard="if True:"), "TP416") == []


LAYER_STACK = """
import torch
from torch import nn


def clamp_overflow(t):
    if {test}:
        t = torch.clamp(t, -6e4, 6e4)
    return t


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return clamp_overflow(self.fc(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(Layer() for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    encoder = Encoder().to(device)
    for _ in range(4):
        encoder(torch.randn(2, 8, device=device))


main()
"""


def test_layers_iterated_from_a_module_list_are_followed_into_their_forward() -> None:
    bad = LAYER_STACK.format(test="t.isinf().any()")
    assert _lines(bad, "TP206") == [_line_of(bad, "if t.isinf")]
    assert _lines(LAYER_STACK.format(test="t.dtype == torch.float16"), "TP206") == []


# set l (2026-11-27): a config's device_id default that nothing sets from the local rank
INDEX_IN_A_CONFIG = """
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass
class Config:
    device_id: int = 0
    backend: str = "nccl"


def init(cfg):
    {assign}
    torch.cuda.set_device(cfg.device_id)
    dist.init_process_group(cfg.backend)


init(Config())
"""


def test_a_device_index_from_a_config_default_is_one_gpu_for_every_rank() -> None:
    bad = INDEX_IN_A_CONFIG.format(assign="pass")
    assert _lines(bad, "TP110") == [_line_of(bad, "set_device(")]
    good = INDEX_IN_A_CONFIG.format(assign='cfg.device_id = int(os.environ["LOCAL_RANK"])')
    assert _lines(good, "TP110") == []


# set l (2026-11-27): an evaluation-only job (no DDP) whose metrics are named before returning
SHARD_EVALUATION = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


@torch.no_grad()
def evaluate(model, loader, device):
    hits = torch.zeros((), device=device)
    seen = torch.zeros((), device=device)
    for images, labels in loader:
        hits += (model(images.to(device)).argmax(1) == labels.to(device)).sum()
        seen += labels.numel()
    {reduce}
    accuracy = hits / seen
    return {{"accuracy": accuracy}}


def main(model, dataset, device):
    dist.init_process_group("nccl")
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    print(evaluate(model, loader, device))
"""


def test_a_shard_metric_named_before_it_is_returned_is_followed_without_ddp() -> None:
    bad = SHARD_EVALUATION.format(reduce="pass")
    assert _lines(bad, "TP414") == [_line_of(bad, "accuracy = hits")]
    good = SHARD_EVALUATION.format(reduce="dist.all_reduce(hits); dist.all_reduce(seen)")
    assert _lines(good, "TP414") == []


SUMMED_EPOCH_LOSS = """
import torch
import torch.distributed as dist
import torch.nn.functional as F


def reduce_tensor(inp):
    reduced = inp.clone()
    dist.all_reduce(reduced)
    return reduced  # returned


def train_one_epoch(model, loader, device):
    loss_sum = torch.zeros((), device=device)
    for x, y in loader:
        loss_sum += F.cross_entropy(model(x.to(device)), y.to(device)).detach()
    return reduce_tensor(loss_sum / len(loader))


def main(model, loader, device, history):
    avg_loss = train_one_epoch(model, loader, device)
    history.append({logged})
"""


def test_a_summed_mean_is_followed_through_the_function_that_returns_it() -> None:
    bad = SUMMED_EPOCH_LOSS.format(logged="avg_loss.item()")
    assert _lines(bad, "TP421") == [_line_of(bad, "# returned")]
    good = SUMMED_EPOCH_LOSS.format(logged="avg_loss.item() / dist.get_world_size()")
    assert _lines(good, "TP421") == []


REPLICATED_TABLE = """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, device, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.table = torch.randn(64, dim).to(device)  # the table

    def forward(self, x):
        return self.proj(x) + self.table{read}[: x.size(1)]


def main():
    device = torch.device("cuda")
    model = nn.DataParallel(Encoder(device).to(device))
    return model
"""


def test_a_device_tensor_attribute_under_data_parallel_is_not_replicated() -> None:
    bad = REPLICATED_TABLE.format(read="")
    assert _lines(bad, "TP105") == [_line_of(bad, "# the table")]
    good = REPLICATED_TABLE.format(read=".to(x.device)")
    assert _lines(good, "TP105") == []
    single = bad.replace("nn.DataParallel(", "(")
    assert _lines(single, "TP105") == []


DATASET_ON_DEVICE = """
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, device):
        self.device = device

    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.as_tensor([float(i)] * 4, device=self.device)  # on the device
        return x, torch.tensor(i % 2, device=self.device)


def collate(samples):
    xs, ys = zip(*samples)
    return torch.stack(xs), torch.stack(ys)


def train(device):
    model = nn.Linear(4, 2).to(device)
    loader = DataLoader(Samples(device), batch_size=8{collate})
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
"""


@pytest.mark.parametrize("collate", ["", ", collate_fn=collate"])
def test_batches_of_a_dataset_that_makes_its_items_on_the_device_are_not_said_on_the_host(
    collate: str,
) -> None:
    source = DATASET_ON_DEVICE.format(collate=collate)
    text = textwrap.dedent(source)
    codes = {f.code for f in analyze(text, "prog.py", lambda c: True)}
    assert "TP114" in codes  # the dataset's own mistake
    assert not codes & {"TP102", "TP150"}


TF32_SOLVER = """
import torch

{switch}


def kabsch(src, dst):
    h = (src - src.mean(0)).T @ (dst - dst.mean(0))
    u, _, vt = torch.linalg.svd(h)
    return vt.T @ u.T
"""


@pytest.mark.parametrize(
    ("switch", "found"),
    [
        ("torch.backends.cuda.matmul.allow_tf32 = True", True),
        ('torch.set_float32_matmul_precision("medium")', True),
        ("torch.backends.cuda.matmul.allow_tf32 = False", False),
        ('torch.set_float32_matmul_precision("highest")', False),
        ("torch.backends.cudnn.allow_tf32 = True", False),
    ],
)
def test_tf32_is_flagged_only_where_it_reaches_the_products_a_solver_is_given(
    switch: str, found: bool
) -> None:
    source = TF32_SOLVER.format(switch=switch)
    assert bool(_lines(source, "TP328")) is found


def test_a_parameter_left_unused_is_silent_where_ddp_finds_unused_parameters() -> None:
    source = (Path(__file__).parents[1] / "rules" / "TP423" / "bad.py").read_text()
    assert _lines(source, "TP423")
    tolerant = source.replace(
        "device_ids=[rank])", "device_ids=[rank], find_unused_parameters=True)"
    )
    assert _lines(tolerant, "TP423") == []


def test_tf32_reaches_a_solver_through_a_helper_that_takes_the_product() -> None:
    source = """
import torch

torch.backends.cuda.matmul.allow_tf32 = True


class Posterior:
    def kernel(self, a, b):
        return torch.exp(-(a @ b.T))

    def fit(self, x):
        k = self.kernel(x, x) + 1e-4 * torch.eye(len(x))
        return torch.linalg.cholesky(k)
"""
    assert _lines(source, "TP328") == [4]


REPLICATED_MASK = """
import torch
from torch import nn


class MaskedLinear(nn.Linear):
    def __init__(self, n):
        super().__init__(n, n)
        {declare}

    def set_mask(self, mask):
        self.mask = mask.to(device=self.weight.device)  # set later

    def forward(self, x):
        return nn.functional.linear(x, self.weight * self.mask, self.bias)


model = nn.DataParallel(MaskedLinear(4).cuda())
"""


def test_a_device_tensor_set_by_any_method_under_data_parallel_is_not_replicated() -> None:
    bad = REPLICATED_MASK.format(declare="self.mask = None")
    assert _lines(bad, "TP105") == [_line_of(bad, "# set later")]
    good = REPLICATED_MASK.format(declare='self.register_buffer("mask", None)')
    assert _lines(good, "TP105") == []
