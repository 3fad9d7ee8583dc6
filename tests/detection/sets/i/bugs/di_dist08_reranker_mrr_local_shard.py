# source: https://github.com/modelscope/ms-swift/pull/10088
# area: porting & distributed
# bug: reranker MRR/NDCG are averaged over this rank's validation shard only and never reduced across DDP ranks, so checkpoint selection on rank 0 uses a shard-dependent metric
import copy
import math
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class QueryGroupDataset(Dataset):
    def __init__(self, n_queries, n_docs=8, dim=32, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.queries = torch.randn(n_queries, dim, generator=g)
        self.docs = torch.randn(n_queries, n_docs, dim, generator=g)
        self.pos = torch.randint(0, n_docs, (n_queries,), generator=g)
        self.docs[torch.arange(n_queries), self.pos] += 0.25 * self.queries

    def __len__(self):
        return len(self.queries)

    def __getitem__(self, i):
        return self.queries[i], self.docs[i], self.pos[i]


class CrossScorer(nn.Module):
    def __init__(self, dim=32, hidden=64):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3 * dim, hidden), nn.GELU(), nn.Linear(hidden, 1))

    def forward(self, q, docs):
        q = q.unsqueeze(1).expand_as(docs)
        return self.mlp(torch.cat([q, docs, q * docs], dim=-1)).squeeze(-1)


@torch.no_grad()
def evaluate_ranking(model, loader, device):
    model.eval()
    mrr_sum = torch.zeros((), device=device)
    ndcg_sum = torch.zeros((), device=device)
    n_queries = torch.zeros((), device=device)
    for q, docs, pos in loader:
        q, docs, pos = q.to(device), docs.to(device), pos.to(device)
        scores = model(q, docs)
        rank = (scores > scores.gather(1, pos[:, None])).sum(dim=1) + 1
        mrr_sum += (1.0 / rank).sum()
        ndcg_sum += (1.0 / torch.log2(rank.float() + 1)).sum()
        n_queries += len(pos)
    model.train()
    return {"mrr": mrr_sum / n_queries, "ndcg": ndcg_sum / n_queries}  # expect: any


def train(model, train_loader, val_loader, device, epochs=3):
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    best, best_state = -math.inf, None
    for epoch in range(epochs):
        train_loader.sampler.set_epoch(epoch)
        for q, docs, pos in train_loader:
            q, docs, pos = q.to(device), docs.to(device), pos.to(device)
            loss = F.cross_entropy(model(q, docs), pos)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        metrics = {k: v.item() for k, v in evaluate_ranking(model, val_loader, device).items()}
        if dist.get_rank() == 0:
            print(f"epoch {epoch} mrr {metrics['mrr']:.4f} ndcg {metrics['ndcg']:.4f}")
            if metrics["mrr"] > best:
                best, best_state = metrics["mrr"], copy.deepcopy(model.module.state_dict())
    return best, best_state


def main():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    local_rank = int(os.environ["LOCAL_RANK"])
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo")
    torch.manual_seed(0)
    train_set, val_set = QueryGroupDataset(256, seed=0), QueryGroupDataset(96, seed=1)
    train_loader = DataLoader(train_set, batch_size=32, sampler=DistributedSampler(train_set))
    val_loader = DataLoader(val_set, batch_size=32, sampler=DistributedSampler(val_set, shuffle=False))
    model = DDP(CrossScorer().to(device), device_ids=[local_rank] if cuda else None)
    best, _ = train(model, train_loader, val_loader, device)
    if dist.get_rank() == 0:
        print(f"best mrr {best:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
