# source: https://github.com/Lightning-AI/pytorch-lightning/issues/243
# area: porting & distributed
# bug: validation accuracy is computed only from this rank's DistributedSampler shard and never reduced, so rank 0 logs and picks the "best" checkpoint from a fraction of the val set
import os
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def setup():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        return torch.device("cuda", local_rank)
    dist.init_process_group("gloo")
    return torch.device("cpu")


def synthetic_images(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 16, 16, generator=g)
    y = (x[:, 0].mean(dim=(1, 2)) > 0).long() + 2 * (x[:, 1].mean(dim=(1, 2)) > 0).long()
    return TensorDataset(x, y)


class TinyCNN(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device, dtype=torch.long)
    seen = torch.zeros((), device=device, dtype=torch.long)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        correct += (model(x).argmax(dim=1) == y).sum()
        seen += y.numel()
    return (correct.float() / seen).item()  # expect: any


def train_one_epoch(model, loader, opt, device):
    model.train()
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def main(epochs=3):
    device = setup()
    pin = device.type == "cuda"
    train_ds, val_ds = synthetic_images(256, 0), synthetic_images(96, 1)
    train_sampler = DistributedSampler(train_ds, shuffle=True)
    val_sampler = DistributedSampler(val_ds, shuffle=False)
    train_loader = DataLoader(train_ds, batch_size=32, sampler=train_sampler, pin_memory=pin)
    val_loader = DataLoader(val_ds, batch_size=48, sampler=val_sampler, pin_memory=pin)
    model = DDP(TinyCNN().to(device))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    best = -1.0
    with tempfile.TemporaryDirectory() as out_dir:
        for epoch in range(epochs):
            train_sampler.set_epoch(epoch)
            train_one_epoch(model, train_loader, opt, device)
            acc = evaluate(model, val_loader, device)
            if dist.get_rank() == 0:
                print(f"epoch {epoch} val_acc {acc:.3f}")
                if acc > best:
                    best = acc
                    torch.save(model.module.state_dict(), os.path.join(out_dir, "best.pt"))
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
