# source: https://github.com/BatsResearch/taglets/pull/28
# area: porting & distributed
# bug: the DistributedSampler never gets set_epoch(), so under torchrun every epoch on every GPU replays the same shuffled order
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class TrainableConfig:
    def __init__(self, batch_size=32, num_epochs=3, lr=1e-3, num_workers=0):
        self.batch_size = batch_size
        self.num_epochs = num_epochs
        self.lr = lr
        self.num_workers = num_workers


class Trainable:
    """Fine-tunes a small head on pre-extracted features, one process per GPU."""

    def __init__(self, model, config, rank=0, world_size=1, local_rank=0):
        self.config = config
        self.rank = rank
        self.world_size = world_size
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
            self.device = torch.device("cuda", local_rank)
        else:
            self.device = torch.device("cpu")
        model = model.to(self.device)
        if dist.is_initialized():
            model = DDP(model, device_ids=[local_rank] if self.device.type == "cuda" else None)
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.criterion = nn.CrossEntropyLoss()

    def _get_train_loader(self, dataset):
        sampler = DistributedSampler(dataset, num_replicas=self.world_size, rank=self.rank, shuffle=True)  # expect[epoch]: any
        loader = DataLoader(dataset, batch_size=self.config.batch_size, sampler=sampler,
                            num_workers=self.config.num_workers,
                            pin_memory=self.device.type == "cuda")
        return loader, sampler

    def _train_epoch(self, loader):
        self.model.train()
        running = torch.zeros((), device=self.device)
        steps = 0
        for features, labels in loader:
            features = features.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.criterion(self.model(features), labels)
            loss.backward()
            self.optimizer.step()
            running += loss.detach()
            steps += 1
        return running / max(steps, 1)

    def train(self, dataset):
        loader, sampler = self._get_train_loader(dataset)
        history = []
        for epoch in range(self.config.num_epochs):  # expect[epoch]: any
            history.append(self._train_epoch(loader))
        return torch.stack(history).cpu()


def build_dataset(n=512, dim=64, classes=10):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, dim, generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    return TensorDataset(x, y)


def main():
    rank = int(os.environ.get("RANK", 0))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if "RANK" in os.environ and dist.is_available():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    head = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    trainable = Trainable(head, TrainableConfig(), rank, world_size, local_rank)
    losses = trainable.train(build_dataset())
    if rank == 0:
        print("epoch losses:", [round(v, 4) for v in losses.tolist()])
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
