import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, out_dir, rank):
        dist.init_process_group("nccl")
        self.rank = rank
        self.model = DDP(model.cuda(rank), device_ids=[rank])
        self.best_path = os.path.join(out_dir, "best.pt")
        self.best = float("inf")

    def _save_if_best(self, metric):
        if metric < self.best and self.rank == 0:
            self.best = metric
            torch.save(self.model.module.state_dict(), self.best_path)

    def fit(self, epochs, run_epoch):
        for epoch in range(epochs):
            self._save_if_best(run_epoch(self.model))
        state = torch.load(self.best_path, map_location=f"cuda:{self.rank}")
        self.model.module.load_state_dict(state)


def export(model, path):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path)
    return torch.load(path, map_location="cpu")
