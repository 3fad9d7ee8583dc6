# source: https://github.com/allenai/OLMo/pull/720
# area: porting & distributed
# bug: the seed broadcast runs on "cuda" before torch.cuda.set_device(local_rank), so every rank creates its NCCL communicator and tensor on GPU 0 (GPU 0 memory blow-up / possible hang)
import os
import random

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class DistEnv:
    def __init__(self):
        self.enabled = "RANK" in os.environ and dist.is_available() and torch.cuda.is_available()
        self.rank = int(os.environ.get("RANK", 0))
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0))
        self.world = int(os.environ.get("WORLD_SIZE", 1))
        self.device = torch.device("cpu")

    def setup(self, seed=None):
        if not self.enabled:
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            return seed if seed is not None else 1234
        dist.init_process_group(backend="nccl")
        seed_t = torch.tensor([seed if seed is not None else random.randint(0, 2**31 - 1)], device="cuda")  # expect[w]: any
        dist.broadcast(seed_t, src=0)
        torch.cuda.set_device(self.local_rank)  # expect[w]: any
        self.device = torch.device("cuda", self.local_rank)
        return int(seed_t.item())


class BagOfWordsClassifier(nn.Module):
    def __init__(self, vocab=5000, dim=64, classes=4):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, classes))

    def forward(self, tokens, offsets):
        return self.mlp(self.emb(tokens, offsets))


def fake_batch(batch, vocab, device, gen):
    lengths = torch.randint(3, 20, (batch,), generator=gen)
    tokens = torch.randint(0, vocab, (int(lengths.sum()),), generator=gen)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    labels = torch.randint(0, 4, (batch,), generator=gen)
    return tokens.to(device), offsets.to(device), labels.to(device)


def main():
    env = DistEnv()
    seed = env.setup()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + env.rank)

    model = BagOfWordsClassifier().to(env.device)
    if env.enabled:
        model = DDP(model, device_ids=[env.local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()

    total = torch.zeros((), device=env.device)
    steps = 20
    for _ in range(steps):
        tokens, offsets, labels = fake_batch(16, 5000, env.device, gen)
        loss = loss_fn(model(tokens, offsets), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
    if env.rank == 0:
        print(f"avg train loss {(total / steps).item():.4f}")
    if env.enabled:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
