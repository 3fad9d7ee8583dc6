# twin of: bugs/do_dist01_global_rank_device.py
# area: porting & distributed
# correct: the CUDA device index comes from LOCAL_RANK, which is always a valid ordinal on the process's own node
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class RunEnv:
    """Launch information read from the torchrun / slurm environment."""

    def __init__(self):
        self.distributed = "RANK" in os.environ and dist.is_available()
        self.rank = int(os.environ.get("RANK", 0))
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0))
        self.world_size = int(os.environ.get("WORLD_SIZE", 1))

    def pick_device(self):
        if torch.cuda.is_available():
            return torch.device("cuda", self.local_rank)
        return torch.device("cpu")


class AtomicEnergyNet(nn.Module):
    """Per-atom fitting network; the frame energy is the sum of atomic energies."""

    def __init__(self, n_desc=24, hidden=64):
        super().__init__()
        self.fitting = nn.Sequential(
            nn.Linear(n_desc, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, descriptors):
        atomic = self.fitting(descriptors).squeeze(-1)
        return atomic.sum(dim=-1)


def make_frames(n_frames=256, n_atoms=12, n_desc=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    desc = torch.randn(n_frames, n_atoms, n_desc, generator=g)
    energy = desc.pow(2).mean(dim=(1, 2)) * n_atoms + 0.05 * torch.randn(n_frames, generator=g)
    return TensorDataset(desc, energy)


def train(env, epochs=3, batch_size=32):
    device = env.pick_device()
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if env.distributed:
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")

    data = make_frames()
    sampler = DistributedSampler(data) if env.distributed else None
    loader = DataLoader(data, batch_size=batch_size, shuffle=sampler is None, sampler=sampler)

    model = AtomicEnergyNet().to(device)
    if env.distributed:
        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        running = torch.zeros((), device=device)
        for desc, energy in loader:
            desc, energy = desc.to(device), energy.to(device)
            pred = model(desc)
            loss = nn.functional.mse_loss(pred, energy)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.detach()
        if env.rank == 0:
            print(f"epoch {epoch}: rmse/frame {(running / len(loader)).sqrt().item():.4f}")

    if env.distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    train(RunEnv())
