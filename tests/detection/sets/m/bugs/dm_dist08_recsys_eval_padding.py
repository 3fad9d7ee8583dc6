# source: https://github.com/RUCAIBox/RecBole/pull/1872
# area: porting & distributed
# bug: the multi-GPU evaluation shards users with a padding DistributedSampler, so duplicated users are scored twice and the all-reduced Hit@K/NDCG@K are averaged over more users than the test set has
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SequenceDataset(Dataset):
    def __init__(self, num_users, num_items, seq_len=10, seed=0):
        g = torch.Generator().manual_seed(seed)
        start = torch.randint(1, num_items + 1, (num_users, 1), generator=g)
        step = torch.randint(1, 4, (num_users, 1), generator=g)
        walk = (start + step * torch.arange(seq_len + 1)) % num_items + 1
        self.seqs, self.targets = walk[:, :-1], walk[:, -1]

    def __len__(self):
        return self.seqs.shape[0]

    def __getitem__(self, idx):
        return self.seqs[idx], self.targets[idx]


class GRU4Rec(nn.Module):
    def __init__(self, num_items, dim=32):
        super().__init__()
        self.item_emb = nn.Embedding(num_items + 1, dim, padding_idx=0)
        self.gru = nn.GRU(dim, dim, batch_first=True)

    def forward(self, seqs):
        hidden, _ = self.gru(self.item_emb(seqs))
        return hidden[:, -1] @ self.item_emb.weight.t()


def dist_info():
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def train_epoch(model, dataset, optimizer, device, epoch, batch_size=64):
    rank, world = dist_info()
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
    sampler.set_epoch(epoch)
    for seqs, targets in DataLoader(dataset, batch_size=batch_size, sampler=sampler):
        scores = model(seqs.to(device))
        loss = F.cross_entropy(scores, targets.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


@torch.no_grad()
def evaluate(model, dataset, device, k=10, batch_size=64):
    rank, world = dist_info()
    model.eval()
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False)  # expect[p]: any
    totals = torch.zeros(3, device=device)
    for seqs, targets in DataLoader(dataset, batch_size=batch_size, sampler=sampler):
        seqs, targets = seqs.to(device), targets.to(device)
        scores = model(seqs)
        scores[:, 0] = float("-inf")
        hits = scores.topk(k, dim=1).indices == targets[:, None]
        found = hits.any(dim=1).float()
        position = hits.float().argmax(dim=1).float()
        totals += torch.stack([found.sum(), (found / torch.log2(position + 2)).sum(), torch.ones_like(found).sum()])
    if world > 1:
        dist.all_reduce(totals)
    model.train()
    hit, ndcg, users = totals.tolist()
    return {f"hit@{k}": hit / users, f"ndcg@{k}": ndcg / users, "users": int(users)}  # expect[p]: any


def main():
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    distributed = "RANK" in os.environ and dist.is_available()
    if distributed:
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    num_items = 200
    train_set, test_set = SequenceDataset(1000, num_items, seed=0), SequenceDataset(250, num_items, seed=1)
    torch.manual_seed(0)
    model = GRU4Rec(num_items).to(device)
    if distributed:
        model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for epoch in range(3):
        train_epoch(model, train_set, optimizer, device, epoch)
        metrics = evaluate(getattr(model, "module", model), test_set, device)
        if dist_info()[0] == 0:
            print(f"epoch {epoch}: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                                 for k, v in metrics.items()))
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
