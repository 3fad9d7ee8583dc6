# source: https://github.com/NVIDIA/apex/issues/458
# area: device placement
# bug: every DDP rank resumes with torch.load() and no map_location, so the checkpoint written from cuda:0 is deserialized onto cuda:0 by all ranks (stray contexts/memory on GPU 0, wrong-device optimizer state)
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    if "RANK" in os.environ and dist.is_available():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend=backend)
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        return True, dist.get_rank(), local_rank
    return False, 0, 0


class ConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def train_one_epoch(model, optimizer, loader, device):
    model.train()
    total = torch.zeros((), device=device)
    for images, target in loader:
        images, target = images.to(device), target.to(device)
        loss = F.cross_entropy(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total


def save_checkpoint(path, model, optimizer, epoch, rank):
    if rank == 0:
        module = model.module if isinstance(model, DDP) else model
        torch.save({"state_dict": module.state_dict(), "optimizer": optimizer.state_dict(),
                    "epoch": epoch}, path)


def resume_from(path, model, optimizer):
    checkpoint = torch.load(path)  # expect: any
    module = model.module if isinstance(model, DDP) else model
    module.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"] + 1


def main():
    distributed, rank, local_rank = setup()
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    torch.manual_seed(0)

    images = torch.randn(64, 3, 16, 16)
    labels = torch.randint(0, 10, (64,))
    dataset = torch.utils.data.TensorDataset(images, labels)
    sampler = torch.utils.data.distributed.DistributedSampler(dataset) if distributed else None
    loader = torch.utils.data.DataLoader(dataset, batch_size=16, sampler=sampler, shuffle=sampler is None)

    model = ConvNet().to(device)
    if distributed:
        model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)

    ckpt_dir = [tempfile.mkdtemp(prefix="resume_") if rank == 0 else None]
    if distributed:
        dist.broadcast_object_list(ckpt_dir, src=0)
    ckpt_dir = ckpt_dir[0]
    ckpt_path = os.path.join(ckpt_dir, "checkpoint.pth.tar")
    train_one_epoch(model, optimizer, loader, device)
    save_checkpoint(ckpt_path, model, optimizer, 0, rank)
    if distributed:
        dist.barrier()

    start_epoch = resume_from(ckpt_path, model, optimizer)
    for epoch in range(start_epoch, start_epoch + 2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        total = train_one_epoch(model, optimizer, loader, device)
        if rank == 0:
            print(f"epoch {epoch}: loss sum {total.item():.4f}")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        shutil.rmtree(ckpt_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
