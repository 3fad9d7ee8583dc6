# source: https://github.com/facebookresearch/ClassyVision/pull/118
# area: porting & distributed
# bug: the dataset wrapper builds its DistributedSampler without passing the current epoch, so under torchrun every epoch on every GPU sees exactly the same shuffled order
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SyntheticImageFolder(Dataset):
    def __init__(self, n=384, num_classes=5, size=16, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, num_classes, (n,), generator=g)
        self.images = torch.randn(n, 3, size, size, generator=g) + self.labels.view(-1, 1, 1, 1) * 0.3

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.images[idx], self.labels[idx]


class ClassyDataset:
    """Wraps a map-style dataset and hands out one loader per epoch."""

    def __init__(self, dataset, batch_size, shuffle=True):
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle

    def _get_sampler(self, epoch=0):
        if not (dist.is_available() and dist.is_initialized()):
            return None
        sampler = DistributedSampler(self.dataset, shuffle=self.shuffle, seed=17)
        sampler.set_epoch(epoch)
        return sampler

    def iterator(self, epoch):
        sampler = self._get_sampler()  # expect: any
        return DataLoader(
            self.dataset,
            batch_size=self.batch_size,
            shuffle=self.shuffle and sampler is None,
            sampler=sampler,
            drop_last=True,
        )


def small_convnet(num_classes=5):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(32, num_classes),
    )


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")

    train_set = ClassyDataset(SyntheticImageFolder(), batch_size=32)
    model = small_convnet().to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[local_rank] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(3):
        model.train()
        total = torch.zeros((), device=device)
        loader = train_set.iterator(epoch)
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            loss = criterion(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        if int(os.environ.get("RANK", 0)) == 0:
            print(f"epoch {epoch} mean loss {(total / len(loader)).item():.4f}")

    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
