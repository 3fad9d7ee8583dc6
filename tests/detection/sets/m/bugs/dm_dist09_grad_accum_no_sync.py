# source: https://github.com/karpathy/nanochat/pull/33
# area: porting & distributed
# bug: with DDP, every gradient-accumulation micro-step runs forward/backward outside no_sync(), so the full gradient all-reduce is paid grad_accum_steps times per optimizer step instead of once
import math
import os
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclass
class TrainConfig:
    vocab_size: int = 256
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    seq_len: int = 64
    device_batch_size: int = 8
    total_batch_tokens: int = 2048
    num_steps: int = 6
    lr: float = 3e-3

    def grad_accum_steps(self, world_size):
        tokens_per_micro = self.device_batch_size * self.seq_len * world_size
        assert self.total_batch_tokens % tokens_per_micro == 0
        return self.total_batch_tokens // tokens_per_micro


class TinyGPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Parameter(torch.zeros(1, cfg.seq_len, cfg.d_model))
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, 4 * cfg.d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(cfg.seq_len), persistent=False)

    def forward(self, idx, targets):
        h = self.blocks(self.tok(idx) + self.pos[:, :idx.shape[1]], mask=self.mask, is_causal=True)
        logits = self.head(h)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def token_batches(cfg, device, rank):
    g = torch.Generator(device=device).manual_seed(1000 + rank)
    while True:
        start = torch.randint(0, cfg.vocab_size, (cfg.device_batch_size, 1), device=device, generator=g)
        stream = (start + 7 * torch.arange(cfg.seq_len + 1, device=device)) % cfg.vocab_size
        yield stream[:, :-1], stream[:, 1:]


def setup():
    if "RANK" in os.environ and dist.is_available():
        local_rank = int(os.environ["LOCAL_RANK"])
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
        return device, dist.get_rank(), dist.get_world_size(), True
    return torch.device("cuda" if torch.cuda.is_available() else "cpu"), 0, 1, False


def main():
    cfg = TrainConfig()
    device, rank, world, ddp = setup()
    torch.manual_seed(0)
    model = TinyGPT(cfg).to(device)
    if ddp:
        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    accum = cfg.grad_accum_steps(world)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    amp = torch.autocast(device.type, dtype=torch.bfloat16) if device.type == "cuda" else nullcontext()
    loader = token_batches(cfg, device, rank)
    losses = torch.zeros(cfg.num_steps, device=device)

    for step in range(cfg.num_steps):
        lr = cfg.lr * 0.5 * (1 + math.cos(math.pi * step / cfg.num_steps))
        for group in optimizer.param_groups:
            group["lr"] = lr
        for micro_step in range(accum):
            x, y = next(loader)
            with amp:
                loss = model(x, y)  # expect[n]: any
            losses[step] += loss.detach() / accum
            (loss / accum).backward()  # expect[n]: any
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    if ddp:
        dist.all_reduce(losses)
        losses /= world
    if rank == 0:
        print(f"grad_accum_steps={accum} losses: " + " ".join(f"{v:.3f}" for v in losses.tolist()))
    if ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
