# source: https://github.com/Lightning-AI/pytorch-lightning/issues/17737
# area: device placement
# bug: every rank calls torch.load without map_location, so the snapshot saved by rank 0 is deserialized onto cuda:0 in all processes (extra CUDA contexts and memory on GPU 0)
import os
import shutil
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def setup_distributed():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", _free_port())
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        return torch.device("cuda", local_rank)
    dist.init_process_group("gloo")
    return torch.device("cpu")


class Trainer:
    def __init__(self, model, loader, optimizer, device, snapshot_path):
        self.device = device
        self.loader = loader
        self.optimizer = optimizer
        self.snapshot_path = snapshot_path
        self.epochs_run = 0
        self.model = model.to(device)
        if os.path.exists(snapshot_path):
            self._load_snapshot()
        ids = [device.index] if device.type == "cuda" else None
        self.model = DDP(self.model, device_ids=ids)

    def _load_snapshot(self):
        snapshot = torch.load(self.snapshot_path)  # expect: any
        self.model.load_state_dict(snapshot["model"])
        self.optimizer.load_state_dict(snapshot["optimizer"])
        self.epochs_run = snapshot["epochs_run"]

    def _save_snapshot(self, epoch):
        snapshot = {"model": self.model.module.state_dict(),
                    "optimizer": self.optimizer.state_dict(),
                    "epochs_run": epoch + 1}
        torch.save(snapshot, self.snapshot_path)

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self.loader.sampler.set_epoch(epoch)
            total = torch.zeros((), device=self.device)
            for x, y in self.loader:
                x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
                loss = F.cross_entropy(self.model(x), y)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                total += loss.detach()
            if dist.get_rank() == 0:
                self._save_snapshot(epoch)
                print(f"epoch {epoch} loss {(total / len(self.loader)).item():.4f}")
            dist.barrier()


def build(device, snapshot_path):
    torch.manual_seed(0)
    x = torch.randn(256, 20)
    y = (x[:, :5].sum(1) > 0).long()
    dataset = TensorDataset(x, y)
    loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset),
                        pin_memory=device.type == "cuda")
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return Trainer(model, loader, optimizer, device, snapshot_path)


def main():
    device = setup_distributed()
    run_dir = os.path.join(tempfile.gettempdir(), f"dj_dev09_{os.environ['MASTER_PORT']}")
    os.makedirs(run_dir, exist_ok=True)
    snapshot_path = os.path.join(run_dir, "snapshot.pt")
    build(device, snapshot_path).train(max_epochs=2)
    build(device, snapshot_path).train(max_epochs=4)
    dist.barrier()
    if dist.get_rank() == 0:
        shutil.rmtree(run_dir, ignore_errors=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
