# source: https://github.com/snowflakedb/ArcticTraining/pull/132
# area: porting & distributed
# bug: the CUDA device is chosen from the global RANK instead of LOCAL_RANK, so on a second node rank 8 asks for cuda:8 (invalid device ordinal)
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class TrainConfig:
    vocab_size: int = 500
    embed_dim: int = 64
    num_classes: int = 4
    seq_len: int = 24
    batch_size: int = 32
    lr: float = 3e-3
    epochs: int = 2
    num_samples: int = 512


class DistContext:
    def __init__(self):
        self.rank = int(os.environ.get("RANK", 0))
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0))
        self.world_size = int(os.environ.get("WORLD_SIZE", 1))
        self.enabled = "RANK" in os.environ and dist.is_available()
        self.device = torch.device("cpu")

    def setup(self):
        if torch.cuda.is_available():
            torch.cuda.set_device(self.rank)  # expect[r]: any
            self.device = torch.device("cuda", self.rank)  # expect[r]: any
        if self.enabled:
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            dist.init_process_group(backend=backend)
        return self

    @property
    def is_main(self):
        return self.rank == 0

    def teardown(self):
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()


class BagClassifier(nn.Module):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        self.embed = nn.EmbeddingBag(cfg.vocab_size, cfg.embed_dim, mode="mean")
        self.head = nn.Sequential(nn.Linear(cfg.embed_dim, 64), nn.GELU(), nn.Linear(64, cfg.num_classes))

    def forward(self, tokens):
        return self.head(self.embed(tokens))


def build_loader(cfg: TrainConfig, ctx: DistContext):
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, cfg.vocab_size, (cfg.num_samples, cfg.seq_len), generator=g)
    labels = tokens[:, 0] % cfg.num_classes
    ds = TensorDataset(tokens, labels)
    sampler = DistributedSampler(ds, shuffle=True) if ctx.enabled else None
    loader = DataLoader(ds, batch_size=cfg.batch_size, shuffle=sampler is None, sampler=sampler,
                        pin_memory=torch.cuda.is_available())
    return loader, sampler


def train(cfg: TrainConfig, ctx: DistContext):
    model = BagClassifier(cfg).to(ctx.device)
    if ctx.enabled:
        model = DDP(model, device_ids=[ctx.device] if ctx.device.type == "cuda" else None)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    loader, sampler = build_loader(cfg, ctx)
    for epoch in range(cfg.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        running = torch.zeros((), device=ctx.device)
        for tokens, labels in loader:
            tokens = tokens.to(ctx.device, non_blocking=True)
            labels = labels.to(ctx.device, non_blocking=True)
            loss = F.cross_entropy(model(tokens), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.detach()
        if ctx.is_main:
            print(f"epoch {epoch}: mean loss {(running / len(loader)).item():.4f}")


def main():
    cfg = TrainConfig()
    ctx = DistContext().setup()
    try:
        train(cfg, ctx)
    finally:
        ctx.teardown()


if __name__ == "__main__":
    main()
