# source: https://github.com/huggingface/transformers/pull/10685
# area: porting & distributed
# bug: only rank 0 writes the best checkpoint, but every rank reloads it at the end with no barrier in between, so under torchrun the other ranks can read a missing, stale or half-written file
import os
import tempfile
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class TrainingArguments:
    output_dir: str
    num_epochs: int = 3
    batch_size: int = 64
    load_best_model_at_end: bool = True


class MatrixFactorization(nn.Module):
    def __init__(self, n_users=200, n_items=300, dim=16):
        super().__init__()
        self.user = nn.Embedding(n_users, dim)
        self.item = nn.Embedding(n_items, dim)
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, users, items):
        return (self.user(users) * self.item(items)).sum(-1) + self.bias


class Trainer:
    def __init__(self, model, args, train_ds, eval_ds, device):
        self.args, self.device = args, device
        self.distributed = dist.is_available() and dist.is_initialized()
        self.unwrapped = model.to(device)
        self.model = self.unwrapped
        if self.distributed:
            self.model = nn.parallel.DistributedDataParallel(self.unwrapped, device_ids=[device.index] if device.type == "cuda" else None)
        self.train_sampler = DistributedSampler(train_ds) if self.distributed else None
        eval_sampler = DistributedSampler(eval_ds, shuffle=False) if self.distributed else None
        self.train_loader = DataLoader(train_ds, args.batch_size, sampler=self.train_sampler,
                                       shuffle=self.train_sampler is None)
        self.eval_loader = DataLoader(eval_ds, 256, sampler=eval_sampler)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=5e-3)
        self.best_metric = float("inf")
        self.best_path = os.path.join(args.output_dir, "best_model.bin")

    def is_world_process_zero(self):
        return not self.distributed or dist.get_rank() == 0

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        stats = torch.zeros(2, device=self.device)
        for u, i, r in self.eval_loader:
            u, i, r = u.to(self.device), i.to(self.device), r.to(self.device)
            stats[0] += (self.model(u, i) - r).pow(2).sum()
            stats[1] += r.numel()
        if self.distributed:
            dist.all_reduce(stats)
        self.model.train()
        return (stats[0] / stats[1]).sqrt().item()

    def _maybe_save_best(self, metric):
        if metric < self.best_metric:
            self.best_metric = metric
            if self.is_world_process_zero():
                torch.save(self.unwrapped.state_dict(), self.best_path)

    def train(self):
        for epoch in range(self.args.num_epochs):
            if self.train_sampler is not None:
                self.train_sampler.set_epoch(epoch)
            for u, i, r in self.train_loader:
                u, i, r = u.to(self.device), i.to(self.device), r.to(self.device)
                loss = nn.functional.mse_loss(self.model(u, i), r)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
            self._maybe_save_best(self.evaluate())
        if self.args.load_best_model_at_end:
            state = torch.load(self.best_path, map_location=self.device)  # expect: any
            self.unwrapped.load_state_dict(state)
        return self.best_metric


def ratings(n, seed):
    g = torch.Generator().manual_seed(seed)
    u, i = torch.randint(0, 200, (n,), generator=g), torch.randint(0, 300, (n,), generator=g)
    r = ((u % 5).float() + (i % 7).float() / 2 + torch.randn(n, generator=g) * 0.3).clamp(0, 8)
    return TensorDataset(u, i, r)


def main(tmp):
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        shared = [tmp]
        dist.broadcast_object_list(shared, src=0)
        tmp = shared[0]
    trainer = Trainer(MatrixFactorization(), TrainingArguments(output_dir=tmp), ratings(4000, 0), ratings(800, 1), device)
    best = trainer.train()
    if trainer.is_world_process_zero():
        print(f"best eval rmse {best:.4f}")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as d:
        main(d)
