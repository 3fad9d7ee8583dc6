# twin of: bugs/dn_dist06_seg_reduce_loss_log.py
# area: porting & distributed
# correct: reduce_tensor divides the all_reduced sum by the world size, so the logged loss is the mean over GPUs
import json
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def get_world_size():
    if not dist.is_available() or not dist.is_initialized():
        return 1
    return dist.get_world_size()


def get_rank():
    if not dist.is_available() or not dist.is_initialized():
        return 0
    return dist.get_rank()


def reduce_tensor(inp):
    world_size = get_world_size()
    if world_size < 2:
        return inp
    with torch.no_grad():
        reduced = inp.clone()
        dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
    return reduced / world_size


class TinySegNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
        self.cls = nn.Conv2d(32, num_classes, 1)

    def forward(self, x):
        logits = self.cls(self.enc(x))
        return F.interpolate(logits, size=x.shape[-2:], mode="bilinear", align_corners=False)


def make_loader(distributed, batch_size=4):
    g = torch.Generator().manual_seed(7)
    images = torch.randn(64, 3, 32, 32, generator=g)
    labels = (images[:, 0] > 0).long() + (images[:, 1] > 0.5).long() * 2
    ds = TensorDataset(images, labels)
    sampler = DistributedSampler(ds, shuffle=True) if distributed else None
    return DataLoader(ds, batch_size=batch_size, shuffle=sampler is None, sampler=sampler, drop_last=True), sampler


def train_one_epoch(model, loader, optimizer, device):
    model.train()
    loss_sum = torch.zeros((), device=device)
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        loss = F.cross_entropy(model(images), labels, ignore_index=255)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss_sum += loss.detach()
    return reduce_tensor(loss_sum / len(loader))


def main():
    distributed = "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if distributed:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    model = TinySegNet().to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader, sampler = make_loader(distributed)

    history = []
    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        avg_loss = train_one_epoch(model, loader, optimizer, device)
        if get_rank() == 0:
            history.append({"epoch": epoch, "train_loss": round(avg_loss.item(), 4)})
            print(f"epoch {epoch} train_loss {history[-1]['train_loss']}")

    if get_rank() == 0:
        with tempfile.TemporaryDirectory() as out_dir:
            with open(os.path.join(out_dir, "log.json"), "w") as f:
                json.dump(history, f)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
