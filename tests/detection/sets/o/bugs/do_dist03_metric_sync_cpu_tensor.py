# source: https://github.com/Lightning-AI/pytorch-lightning/issues/2205
# area: porting & distributed
# bug: the metric packs its counters into a new CPU tensor before dist.all_reduce; with the NCCL backend used on GPUs the collective rejects CPU tensors ("Tensors must be CUDA and dense")
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Accuracy:
    """Streaming top-1 accuracy that can be synchronised across processes."""

    def __init__(self, device):
        self.device = device
        self.reset()

    def reset(self):
        self.correct = torch.zeros((), dtype=torch.long, device=self.device)
        self.total = torch.zeros((), dtype=torch.long, device=self.device)

    def update(self, logits, target):
        self.correct += (logits.argmax(dim=-1) == target).sum()
        self.total += target.numel()

    def compute(self):
        stats = torch.tensor([self.correct.item(), self.total.item()], dtype=torch.float64)  # expect[s]: any
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(stats, op=dist.ReduceOp.SUM)  # expect[s]: any
        return (stats[0] / stats[1].clamp(min=1)).item()


class BagOfEmbeddings(nn.Module):
    def __init__(self, vocab=500, dim=64, num_classes=4):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, num_classes))

    def forward(self, tokens):
        return self.head(self.embed(tokens))


def synthetic_reviews(n=512, length=20, vocab=500, num_classes=4, seed=1):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, num_classes, (n,), generator=g)
    tokens = torch.randint(0, vocab, (n, length), generator=g)
    tokens[:, :4] = labels.view(-1, 1) * 100 + torch.randint(0, 100, (n, 4), generator=g)
    return TensorDataset(tokens, labels)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    metric = Accuracy(device)
    for tokens, labels in loader:
        tokens, labels = tokens.to(device), labels.to(device)
        metric.update(model(tokens), labels)
    model.train()
    return metric.compute()


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if distributed:
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")

    train_ds, val_ds = synthetic_reviews(seed=1), synthetic_reviews(n=256, seed=2)
    train_sampler = DistributedSampler(train_ds) if distributed else None
    val_sampler = DistributedSampler(val_ds, shuffle=False) if distributed else None
    train_loader = DataLoader(train_ds, batch_size=64, sampler=train_sampler, shuffle=train_sampler is None)
    val_loader = DataLoader(val_ds, batch_size=128, sampler=val_sampler)

    model = BagOfEmbeddings().to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)

    for epoch in range(3):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for tokens, labels in train_loader:
            tokens, labels = tokens.to(device), labels.to(device)
            loss = nn.functional.cross_entropy(model(tokens), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        acc = evaluate(model, val_loader, device)
        if not distributed or dist.get_rank() == 0:
            print(f"epoch {epoch}: val acc {acc:.3f}")

    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
