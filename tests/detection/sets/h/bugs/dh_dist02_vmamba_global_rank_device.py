# source: https://github.com/MzeroMiko/VMamba/issues/115
# area: porting & distributed
# bug: the CUDA device is picked from the global RANK, so on the second node (rank >= GPUs per node) set_device raises invalid device ordinal
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class PatchStem(nn.Module):
    def __init__(self, in_ch=3, dim=32, patch=4):
        super().__init__()
        self.proj = nn.Conv2d(in_ch, dim, kernel_size=patch, stride=patch)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = self.proj(x).permute(0, 2, 3, 1)
        return self.norm(x)


class TinyVSS(nn.Module):
    def __init__(self, num_classes=10, dim=32):
        super().__init__()
        self.stem = PatchStem(dim=dim)
        self.mix = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        h = self.stem(x)
        h = h + self.mix(h)
        return self.head(h.mean(dim=(1, 2)))


def init_distributed_mode(args):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args["rank"] = int(os.environ["RANK"])
        args["world_size"] = int(os.environ["WORLD_SIZE"])
        args["distributed"] = True
    else:
        args["rank"], args["world_size"], args["distributed"] = 0, 1, False
    if torch.cuda.is_available():
        torch.cuda.set_device(args["rank"])  # expect[w]: any
        args["device"] = torch.device("cuda", args["rank"])  # expect[w]: any
    else:
        args["device"] = torch.device("cpu")
    if args["distributed"]:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend, world_size=args["world_size"], rank=args["rank"])
        dist.barrier()
    return args


def synthetic_batches(n_batches, batch_size, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n_batches):
        x = torch.randn(batch_size, 3, 32, 32, generator=g)
        y = torch.randint(0, 10, (batch_size,), generator=g)
        yield x.to(device), y.to(device)


def train_one_epoch(model, optimizer, device, n_batches=6):
    model.train()
    running = torch.zeros((), device=device)
    for x, y in synthetic_batches(n_batches, 8, device):
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        running += loss.detach()
    return running / n_batches


def main():
    args = init_distributed_mode({})
    device = args["device"]
    torch.manual_seed(0)
    model = TinyVSS().to(device)
    if args["distributed"]:
        ids = [device.index] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    start = time.time()
    for epoch in range(2):
        avg = train_one_epoch(model, optimizer, device)
        if args["rank"] == 0:
            print(f"epoch {epoch} loss {avg.item():.4f} ({time.time() - start:.1f}s)")
    if args["distributed"]:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
