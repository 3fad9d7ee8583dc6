# twin of: bugs/de_dist08_accum_no_sync_offbyone.py
# area: porting & distributed
# correct: micro-batches that are not followed by optimizer.step() run under no_sync(), and the last one of each accumulation window all-reduces the accumulated gradients
import os
import socket
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup():
    if "RANK" not in os.environ:
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    if use_cuda:
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


class KeywordSpotter(nn.Module):
    def __init__(self, n_mels=40, hidden=64, n_keywords=6):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(n_mels, hidden, 5, padding=2), nn.ReLU(),
            nn.Conv1d(hidden, hidden, 5, padding=2, stride=2), nn.ReLU(),
        )
        self.head = nn.Linear(hidden, n_keywords)

    def forward(self, mels):
        return self.head(self.conv(mels).mean(dim=-1))


class Trainer:
    def __init__(self, model, device, accum_grad=4, lr=1e-3):
        self.device = device
        ids = [device.index] if device.type == "cuda" else None
        self.model = nn.parallel.DistributedDataParallel(model.to(device), device_ids=ids)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr)
        self.accum_grad = accum_grad

    def train_epoch(self, loader):
        self.model.train()
        total = torch.zeros((), device=self.device)
        self.opt.zero_grad(set_to_none=True)
        for batch_idx, (mels, labels) in enumerate(loader):
            mels = mels.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            sync_ctx = self.model.no_sync if (batch_idx + 1) % self.accum_grad else nullcontext
            with sync_ctx():
                loss = F.cross_entropy(self.model(mels), labels) / self.accum_grad
                loss.backward()
            total += loss.detach()
            if (batch_idx + 1) % self.accum_grad == 0:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
                self.opt.step()
                self.opt.zero_grad(set_to_none=True)
        return total * self.accum_grad / len(loader)


def main(epochs=3):
    device = setup()
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 6, (256,), generator=g)
    mels = torch.randn(256, 40, 50, generator=g) + labels.view(-1, 1, 1).float() * 0.3
    ds = TensorDataset(mels, labels)
    sampler = DistributedSampler(ds, shuffle=True)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, pin_memory=device.type == "cuda")
    trainer = Trainer(KeywordSpotter(), device)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        loss = trainer.train_epoch(loader)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
