# source: https://github.com/pytorch/examples/pull/1079
# area: porting & distributed
# bug: the resume path calls torch.load without map_location, so each rank restores the snapshot onto the GPU it was saved from (cuda:0), overloading GPU 0
import os
import tempfile

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class TabularRegressor(nn.Module):
    def __init__(self, n_features=24, hidden=128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_features, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


class Trainer:
    def __init__(self, model, snapshot_path, save_every=2):
        self.distributed = dist.is_available() and dist.is_initialized()
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            self.device = torch.device("cuda", self.local_rank)
        else:
            self.device = torch.device("cpu")
        self.model = model.to(self.device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.snapshot_path = snapshot_path
        self.save_every = save_every
        self.epochs_run = 0
        if os.path.exists(snapshot_path):
            self._load_snapshot()
        if self.distributed:
            self.model = DDP(self.model, device_ids=[self.local_rank])

    def _raw_model(self):
        return self.model.module if isinstance(self.model, DDP) else self.model

    def _load_snapshot(self):
        snapshot = torch.load(self.snapshot_path)  # expect: any
        self._raw_model().load_state_dict(snapshot["MODEL_STATE"])
        self.opt.load_state_dict(snapshot["OPT_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]
        print(f"resumed from epoch {self.epochs_run}")

    def _save_snapshot(self, epoch):
        snapshot = {
            "MODEL_STATE": self._raw_model().state_dict(),
            "OPT_STATE": self.opt.state_dict(),
            "EPOCHS_RUN": epoch,
        }
        torch.save(snapshot, self.snapshot_path)

    def _run_epoch(self, steps=8):
        total = torch.zeros((), device=self.device)
        for _ in range(steps):
            x = torch.randn(32, 24, device=self.device)
            y = x[:, :4].sum(-1)
            loss = nn.functional.mse_loss(self.model(x), y)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            total += loss.detach()
        return total / steps

    def train(self, max_epochs):
        rank = dist.get_rank() if self.distributed else 0
        for epoch in range(self.epochs_run, max_epochs):
            avg = self._run_epoch()
            if rank == 0 and (epoch + 1) % self.save_every == 0:
                self._save_snapshot(epoch + 1)
                print(f"epoch {epoch}: loss {avg.item():.4f} (snapshot saved)")


def main():
    if "RANK" in os.environ and dist.is_available():
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "snapshot.pt")
        Trainer(TabularRegressor(), path).train(max_epochs=4)
        if dist.is_available() and dist.is_initialized():
            dist.barrier()
        Trainer(TabularRegressor(), path).train(max_epochs=6)
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
