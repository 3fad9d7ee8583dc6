# twin of: bugs/cd_dist03_meter_allreduce_cpu_tensor.py
# area: porting & distributed
# correct: the reduction buffer is created on the meter's device, so NCCL can all_reduce it
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Subset, TensorDataset


def init_distributed():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return dist.get_rank(), dist.get_world_size(), device


class AverageMeter:
    def __init__(self, name, device):
        self.name = name
        self.device = device
        self.reset()

    def reset(self):
        self.sum = torch.zeros((), device=self.device)
        self.count = 0

    def update(self, val, n=1):
        self.sum += val.detach() * n
        self.count += n

    def all_reduce(self):
        total = torch.tensor([self.sum.item(), float(self.count)], dtype=torch.float32, device=self.device)
        dist.all_reduce(total, dist.ReduceOp.SUM, async_op=False)
        self.sum, self.count = total[0], int(total[1].item())

    @property
    def avg(self):
        return (self.sum / max(self.count, 1)).item()

    def summary(self):
        return f"{self.name} {self.avg:.3f}"


def build_model(num_classes=10):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(16 * 16, num_classes),
    )


def validate(val_loader, model, criterion, device):
    losses = AverageMeter("Loss", device)
    top1 = AverageMeter("Acc@1", device)
    model.eval()
    with torch.no_grad():
        for images, target in val_loader:
            images = images.to(device, non_blocking=True)
            target = target.to(device, non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            acc1 = (output.argmax(dim=1) == target).float().mean() * 100.0
            losses.update(loss, images.size(0))
            top1.update(acc1, images.size(0))
    losses.all_reduce()
    top1.all_reduce()
    return losses, top1


def main():
    rank, world_size, device = init_distributed()
    torch.manual_seed(0)
    images = torch.randn(200, 3, 16, 16)
    labels = torch.randint(0, 10, (200,))
    dataset = TensorDataset(images, labels)
    shard = Subset(dataset, list(range(rank, len(dataset), world_size)))
    val_loader = DataLoader(shard, batch_size=32, shuffle=False, pin_memory=device.type == "cuda")

    model = build_model().to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    losses, top1 = validate(val_loader, model, criterion, device)
    if rank == 0:
        print(f" * {top1.summary()}  {losses.summary()}  (n={top1.count})")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
