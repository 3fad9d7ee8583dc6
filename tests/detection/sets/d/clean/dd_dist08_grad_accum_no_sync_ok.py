# twin of: bugs/dd_dist08_grad_accum_no_sync.py
# area: porting & distributed
# correct: micro-batches before the accumulation boundary run forward and backward under model.no_sync(), so gradients are all-reduced once per optimizer step
import os
import socket
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class Config:
    vocab_size: int = 500
    seq_len: int = 32
    hidden: int = 64
    num_labels: int = 2
    micro_batch: int = 8
    gradient_accumulation_steps: int = 4
    lr: float = 2e-3
    epochs: int = 2


class PairDataset(Dataset):
    def __init__(self, cfg, n=256, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(1, cfg.vocab_size, (n, cfg.seq_len), generator=g)
        self.labels = (self.ids[:, : cfg.seq_len // 2].float().mean(1) >
                       self.ids[:, cfg.seq_len // 2:].float().mean(1)).long()

    def __len__(self):
        return self.ids.size(0)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


class SentenceClassifier(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden)
        layer = nn.TransformerEncoderLayer(cfg.hidden, nhead=4, dim_feedforward=128, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.classifier = nn.Linear(cfg.hidden, cfg.num_labels)

    def forward(self, input_ids, labels):
        h = self.encoder(self.embed(input_ids))
        logits = self.classifier(h[:, 0])
        return F.cross_entropy(logits, labels)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup():
    for k, v in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}.items():
        os.environ.setdefault(k, v)
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        return torch.device("cuda", local_rank)
    dist.init_process_group("gloo")
    return torch.device("cpu")


def train(cfg, model, loader, sampler, optimizer, device):
    for epoch in range(cfg.epochs):
        sampler.set_epoch(epoch)
        model.train()
        epoch_loss = torch.zeros((), device=device)
        for step, batch in enumerate(loader):
            batch = {k: v.to(device) for k, v in batch.items()}
            sync_now = (step + 1) % cfg.gradient_accumulation_steps == 0
            with nullcontext() if sync_now else model.no_sync():
                loss = model(**batch) / cfg.gradient_accumulation_steps
                loss.backward()
            epoch_loss += loss.detach()
            if sync_now:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
        dist.all_reduce(epoch_loss)
        if dist.get_rank() == 0:
            n_updates = len(loader) // cfg.gradient_accumulation_steps
            print(f"epoch {epoch}: loss {(epoch_loss / (n_updates * dist.get_world_size())).item():.4f}")


def main():
    cfg = Config()
    device = setup()
    torch.manual_seed(0)
    dataset = PairDataset(cfg)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=cfg.micro_batch, sampler=sampler, drop_last=True)
    model = SentenceClassifier(cfg).to(device)
    model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    train(cfg, model, loader, sampler, optimizer, device)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
