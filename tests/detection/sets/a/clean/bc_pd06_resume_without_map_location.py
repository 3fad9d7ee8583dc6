# twin of: bugs/bc_pd06_resume_without_map_location.py
# area: porting & distributed
# correct: the snapshot is loaded with map_location=self.device, so each rank restores it onto its own device (or the CPU)
import os
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distributed():
    if "RANK" not in os.environ:  # plain `python train.py`: a world of one
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


class Trainer:
    def __init__(self, model, loader, sampler, device, snapshot_path):
        self.device = device
        self.model = model.to(device)
        self.loader, self.sampler = loader, sampler
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.snapshot_path = snapshot_path
        self.epochs_run = 0
        if os.path.exists(snapshot_path):
            self._load_snapshot(snapshot_path)
        self.ddp = DDP(self.model, device_ids=[device.index] if device.type == "cuda" else None)

    def _load_snapshot(self, path):
        snapshot = torch.load(path, map_location=self.device)
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.optimizer.load_state_dict(snapshot["OPTIMIZER_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]
        print(f"resumed from epoch {self.epochs_run}")

    def _save_snapshot(self, epoch):
        snapshot = {"MODEL_STATE": self.model.state_dict(), "OPTIMIZER_STATE": self.optimizer.state_dict(), "EPOCHS_RUN": epoch + 1}
        torch.save(snapshot, self.snapshot_path)

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self.sampler.set_epoch(epoch)
            for x, y in self.loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = nn.functional.mse_loss(self.ddp(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            if dist.get_rank() == 0:
                self._save_snapshot(epoch)
                print(f"epoch {epoch}: loss {loss.item():.4f}")
            dist.barrier()


def main():
    torch.manual_seed(0)
    device = init_distributed()
    x = torch.randn(128, 20)
    ds = TensorDataset(x, x[:, :1] * 2 - 1)
    with tempfile.TemporaryDirectory() as tmp:
        snap = os.path.join(tmp, "snapshot.pt")
        for max_epochs in (2, 4):  # second run simulates a restart that resumes
            sampler = DistributedSampler(ds)
            loader = DataLoader(ds, batch_size=16, sampler=sampler)
            Trainer(nn.Linear(20, 1), loader, sampler, device, snap).train(max_epochs)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
