# source: https://github.com/LMCache/LMCache/issues/814
# area: porting & distributed
# bug: the worker binds its CUDA device with the global RANK instead of LOCAL_RANK, so on the second node of a multi-node torchrun launch it asks for a GPU index that does not exist
import os
import socket
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class WorkerInfo:
    rank: int
    local_rank: int
    world_size: int
    device: torch.device


def init_worker() -> WorkerInfo:
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    if torch.cuda.is_available():
        torch.cuda.set_device(rank)  # expect[g]: any
        device = torch.device("cuda", rank)  # expect[g]: any
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world_size)
    return WorkerInfo(rank, local_rank, world_size, device)


class PassageEncoder(nn.Module):
    def __init__(self, vocab=1000, dim=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.proj = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))

    def forward(self, ids, mask):
        h = self.tok(ids) * mask.unsqueeze(-1)
        pooled = h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return F.normalize(self.proj(pooled), dim=-1)


def corpus_shard(info, n_total=240, seq=20):
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(1, 1000, (n_total, seq), generator=g)
    lengths = torch.randint(5, seq + 1, (n_total,), generator=g)
    mask = (torch.arange(seq)[None, :] < lengths[:, None]).float()
    per_rank = n_total // info.world_size
    sl = slice(info.rank * per_rank, (info.rank + 1) * per_rank)
    return ids[sl], mask[sl]


@torch.inference_mode()
def encode_shard(model, ids, mask, info, batch_size=32):
    ids, mask = ids.to(info.device), mask.to(info.device)
    chunks = [model(ids[i:i + batch_size], mask[i:i + batch_size])
              for i in range(0, ids.size(0), batch_size)]
    return torch.cat(chunks)


def gather_index(local_emb, info):
    parts = [torch.empty_like(local_emb) for _ in range(info.world_size)]
    dist.all_gather(parts, local_emb)
    return torch.cat(parts)


def main():
    info = init_worker()
    torch.manual_seed(0)
    model = PassageEncoder().to(info.device).eval()
    ids, mask = corpus_shard(info)
    index = gather_index(encode_shard(model, ids, mask, info), info)
    if info.rank == 0:
        query = index[:3] + 0.01 * torch.randn_like(index[:3])
        scores, hits = (F.normalize(query, dim=-1) @ index.T).topk(2, dim=-1)
        print("index size", tuple(index.shape), "top hits", hits.tolist())
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
