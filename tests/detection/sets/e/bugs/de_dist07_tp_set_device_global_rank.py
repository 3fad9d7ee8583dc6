# source: https://github.com/openai/gpt-oss/pull/267
# area: porting & distributed
# bug: the CUDA device is chosen from the global RANK instead of LOCAL_RANK, so on the second node of a torchrun job ranks ask for cuda:8, cuda:9, ... and fail with "invalid device ordinal"
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def init_distributed():
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    if world_size > 1 and "RANK" in os.environ:
        use_cuda = torch.cuda.is_available()
        dist.init_process_group("nccl" if use_cuda else "gloo", rank=rank, world_size=world_size)
        if use_cuda:
            torch.cuda.set_device(rank)  # expect[w]: any
            device = torch.device("cuda", rank)  # expect[w]: any
        else:
            device = torch.device("cpu")
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return rank, world_size, device


class ColumnParallelLinear(nn.Module):
    def __init__(self, d_in, d_out, rank, world_size):
        super().__init__()
        assert d_out % world_size == 0
        self.weight = nn.Parameter(torch.empty(d_out // world_size, d_in))
        nn.init.normal_(self.weight, std=d_in ** -0.5)

    def forward(self, x):
        return F.linear(x, self.weight)


class RowParallelLinear(nn.Module):
    def __init__(self, d_in, d_out, rank, world_size):
        super().__init__()
        assert d_in % world_size == 0
        self.weight = nn.Parameter(torch.empty(d_out, d_in // world_size))
        nn.init.normal_(self.weight, std=d_in ** -0.5)
        self.world_size = world_size

    def forward(self, x):
        y = F.linear(x, self.weight)
        if self.world_size > 1:
            dist.all_reduce(y)
        return y


class ParallelMLPBlock(nn.Module):
    def __init__(self, dim, hidden, rank, world_size):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = ColumnParallelLinear(dim, hidden, rank, world_size)
        self.down = RowParallelLinear(hidden, dim, rank, world_size)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class ShardedModel(nn.Module):
    def __init__(self, vocab, dim, hidden, layers, rank, world_size):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(ParallelMLPBlock(dim, hidden, rank, world_size) for _ in range(layers))
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(x)


@torch.inference_mode()
def main():
    rank, world_size, device = init_distributed()
    torch.manual_seed(1234)
    model = ShardedModel(vocab=256, dim=64, hidden=256, layers=3, rank=rank, world_size=world_size)
    model = model.to(device).eval()
    ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0)).to(device)
    for _ in range(8):
        nxt = model(ids)[:, -1].argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
    if rank == 0:
        print("generated ids:", ids[:, -8:].tolist())
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
