# twin of: bugs/dn_dist04_numpy_f1_metric_sync.py
# area: porting & distributed
# correct: the confusion matrix is moved back to the rank's GPU before the all_reduce, so NCCL receives a CUDA tensor
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler, Subset, TensorDataset


class BagOfWordsClassifier(nn.Module):
    def __init__(self, vocab=500, dim=32, num_classes=4):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, num_classes))

    def forward(self, tokens):
        return self.head(self.embed(tokens))


class NumpyMacroF1:
    """sklearn-style macro F1: collect predictions, score them with numpy on compute()."""

    def __init__(self, num_classes, device):
        self.num_classes = num_classes
        self.device = device
        self.preds, self.targets = [], []

    def update(self, logits, target):
        self.preds.append(logits.argmax(dim=-1))
        self.targets.append(target)

    def _confusion(self):
        preds = torch.cat(self.preds).cpu().numpy()
        targets = torch.cat(self.targets).cpu().numpy()
        cm = np.zeros((self.num_classes, self.num_classes), dtype=np.int64)
        np.add.at(cm, (targets, preds), 1)
        return torch.from_numpy(cm).to(self.device)

    def compute(self):
        cm = self._confusion()
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(cm, op=dist.ReduceOp.SUM)
        tp = cm.diag().double()
        precision = tp / cm.sum(dim=0).clamp_min(1)
        recall = tp / cm.sum(dim=1).clamp_min(1)
        f1 = 2 * precision * recall / (precision + recall).clamp_min(1e-12)
        return f1.mean().item()

    def reset(self):
        self.preds, self.targets = [], []


def make_dataset(n=240, seq=12, vocab=500, num_classes=4):
    g = torch.Generator().manual_seed(3)
    labels = torch.randint(0, num_classes, (n,), generator=g)
    tokens = torch.randint(0, vocab, (n, seq), generator=g)
    tokens[:, 0] = labels * 7
    return TensorDataset(tokens, labels)


@torch.no_grad()
def evaluate(model, loader, device, num_classes):
    model.eval()
    metric = NumpyMacroF1(num_classes, device)
    for tokens, labels in loader:
        metric.update(model(tokens.to(device)), labels.to(device))
    return metric.compute()


def main():
    distributed = "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if distributed:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    torch.manual_seed(0)
    model = BagOfWordsClassifier().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)

    data = make_dataset()
    train_part = Subset(data, list(range(200)))
    val_part = Subset(data, list(range(200 + rank, len(data), world)))
    sampler = DistributedSampler(train_part, shuffle=True) if distributed else None
    train_loader = DataLoader(train_part, batch_size=16, shuffle=sampler is None, sampler=sampler)
    val_loader = DataLoader(val_part, batch_size=16)

    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        for tokens, labels in train_loader:
            loss = nn.functional.cross_entropy(model(tokens.to(device)), labels.to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        f1 = evaluate(model, val_loader, device, num_classes=4)
        if rank == 0:
            print(f"epoch {epoch} macro-F1 {f1:.3f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
