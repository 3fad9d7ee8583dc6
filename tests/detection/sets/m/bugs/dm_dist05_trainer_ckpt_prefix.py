# source: https://github.com/facebookresearch/fairchem/pull/76
# area: porting & distributed
# bug: the trainer saves the state_dict of the DDP/DataParallel wrapper, so on multi-GPU runs every key carries a "module." prefix and the single-device predictor fails to load it with missing-key errors
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class EnergyModel(nn.Module):
    def __init__(self, num_features=16, hidden=64):
        super().__init__()
        self.atom_mlp = nn.Sequential(nn.Linear(num_features, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.readout = nn.Linear(hidden, 1)

    def forward(self, atoms, mask):
        per_atom = self.readout(self.atom_mlp(atoms)).squeeze(-1)
        return (per_atom * mask).sum(dim=1)


def synthetic_structures(n, max_atoms=12, num_features=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    atoms = torch.randn(n, max_atoms, num_features, generator=g)
    counts = torch.randint(4, max_atoms + 1, (n,), generator=g)
    mask = (torch.arange(max_atoms)[None, :] < counts[:, None]).float()
    energy = (atoms[..., 0].tanh() * mask).sum(dim=1) * 2.0 + 0.3 * counts
    return atoms, mask, energy


class ForcesTrainer:
    def __init__(self, config):
        self.config = config
        self.distributed = "RANK" in os.environ and dist.is_available()
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
            self.device = torch.device("cuda", local_rank)
        else:
            self.device = torch.device("cpu")
        if self.distributed:
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        self.is_master = not self.distributed or dist.get_rank() == 0
        torch.manual_seed(0)
        self.model = EnergyModel(**config["model"]).to(self.device)
        if self.distributed:
            self.model = DDP(self.model, device_ids=[local_rank] if self.device.type == "cuda" else None)
        elif torch.cuda.device_count() > 1:
            self.model = nn.DataParallel(self.model)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=config["lr"])
        atoms, mask, energy = synthetic_structures(256, seed=1)
        self.normalizer = {"mean": energy.mean(), "std": energy.std()}
        self.train_data = (atoms.to(self.device), mask.to(self.device), energy.to(self.device))

    def train(self, epochs, batch_size=32):
        atoms, mask, energy = self.train_data
        target = (energy - self.normalizer["mean"].to(self.device)) / self.normalizer["std"].to(self.device)
        for _ in range(epochs):
            perm = torch.randperm(atoms.shape[0], device=self.device)
            for i in range(0, atoms.shape[0], batch_size):
                idx = perm[i:i + batch_size]
                pred = self.model(atoms[idx], mask[idx])
                loss = nn.functional.l1_loss(pred, target[idx])
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()

    def save_checkpoint(self, path):
        if not self.is_master:
            return
        torch.save({
            "config": self.config,
            "state_dict": self.model.state_dict(),  # expect[k]: any
            "optimizer": self.optimizer.state_dict(),
            "normalizer": self.normalizer,
        }, path)


class EnergyPredictor:
    def __init__(self, checkpoint_path, device):
        ckpt = torch.load(checkpoint_path, map_location=device)
        self.device = device
        self.model = EnergyModel(**ckpt["config"]["model"]).to(device).eval()
        self.model.load_state_dict(ckpt["state_dict"])  # expect[k]: any
        self.mean = ckpt["normalizer"]["mean"].to(device)
        self.std = ckpt["normalizer"]["std"].to(device)

    @torch.no_grad()
    def predict(self, atoms, mask):
        return self.model(atoms.to(self.device), mask.to(self.device)) * self.std + self.mean


def main():
    config = {"model": {"num_features": 16, "hidden": 64}, "lr": 2e-3}
    trainer = ForcesTrainer(config)
    trainer.train(epochs=4)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        trainer.save_checkpoint(path)
        if trainer.is_master:
            predictor = EnergyPredictor(path, trainer.device)
            atoms, mask, energy = synthetic_structures(64, seed=2)
            mae = (predictor.predict(atoms, mask).cpu() - energy).abs().mean()
            print(f"held-out energy MAE: {mae:.3f}")
    if trainer.distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
