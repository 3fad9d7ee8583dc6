# source: https://github.com/pytorch/examples/issues/905
# area: porting & distributed
# bug: validate() returns the accuracy of this rank's shard only; with several GPUs rank 0 logs and picks the best checkpoint from a fraction of the validation set
import os
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Subset, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def setup():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                              MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]))
    gpu = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(gpu)
        dist.init_process_group("nccl")
        return torch.device("cuda", gpu)
    dist.init_process_group("gloo")
    return torch.device("cpu")


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, 12, 12, generator=g)
    y = (x.mean(dim=(1, 2, 3)) > 0).long() + 2 * (x[:, 0, 0, 0] > 0).long()
    return TensorDataset(x, y)


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 6 * 6, 4)

    def forward(self, x):
        return self.fc(F.max_pool2d(F.relu(self.conv(x)), 2).flatten(1))


def train_epoch(model, loader, optimizer, device):
    model.train()
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


def validate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device)
    total = torch.zeros((), device=device)
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            correct += (model(x).argmax(1) == y).sum()
            total += y.numel()
    return (100.0 * correct / total).item()  # expect: any


def main(epochs=3):
    device = setup()
    rank, world = dist.get_rank(), dist.get_world_size()
    pin = device.type == "cuda"
    train_set, val_set = make_data(512, 0), make_data(200, 1)
    train_sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True)
    train_loader = DataLoader(train_set, batch_size=64, sampler=train_sampler, pin_memory=pin)
    val_loader = DataLoader(Subset(val_set, range(rank, len(val_set), world)), batch_size=100, pin_memory=pin)

    model = DDP(SmallNet().to(device), device_ids=[device.index] if pin else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    best_acc1, ckpt = 0.0, os.path.join(tempfile.mkdtemp(), "model_best.pth")
    for epoch in range(epochs):
        train_sampler.set_epoch(epoch)
        train_epoch(model, train_loader, optimizer, device)
        acc1 = validate(model, val_loader, device)
        if rank == 0:
            is_best = acc1 > best_acc1
            best_acc1 = max(acc1, best_acc1)
            print(f"epoch {epoch}: Acc@1 {acc1:.2f} (best {best_acc1:.2f})")
            if is_best:
                torch.save({"epoch": epoch, "state_dict": model.module.state_dict(), "best_acc1": best_acc1}, ckpt)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
