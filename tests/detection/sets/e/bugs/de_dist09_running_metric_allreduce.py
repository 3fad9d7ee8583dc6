# source: https://github.com/facebookresearch/fairchem/pull/75
# area: porting & distributed
# bug: the running metric totals are all-reduced in place after every batch, so on N GPUs previously reduced sums are summed again each step and the energy/force MAE grows geometrically instead of being reduced once at the end
import os
import socket
from collections import defaultdict

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_process_group():
    if "RANK" not in os.environ:
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")
    if use_cuda:
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


class EnergyForceNet(nn.Module):
    """Toy potential: per-atom MLP energies, forces as negative position gradients."""

    def __init__(self, hidden=32):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, pos):
        pos = pos.requires_grad_(True)
        energy = self.mlp(pos).sum(dim=(1, 2))
        forces = -torch.autograd.grad(energy.sum(), pos, create_graph=self.training)[0]
        return energy, forces


class MetricTracker:
    def __init__(self, device):
        self.device = device
        self.stats = defaultdict(lambda: {"total": torch.zeros((), device=device),
                                          "numel": torch.zeros((), device=device)})

    def update(self, name, abs_err):
        self.stats[name]["total"] += abs_err.sum()
        self.stats[name]["numel"] += abs_err.numel()

    def sync(self):
        for entry in self.stats.values():
            dist.all_reduce(entry["total"])  # expect[w]: any
            dist.all_reduce(entry["numel"])

    def summary(self):
        return {k: (v["total"] / v["numel"]).item() for k, v in self.stats.items()}


def validate(model, loader, device):
    model.eval()
    tracker = MetricTracker(device)
    for pos, energy, forces in loader:
        pos, energy, forces = pos.to(device), energy.to(device), forces.to(device)
        with torch.enable_grad():
            pred_e, pred_f = model(pos)
        tracker.update("energy_mae", (pred_e.detach() - energy).abs())
        tracker.update("forces_mae", (pred_f.detach() - forces).abs())
        tracker.sync()  # expect[w]: any
    return tracker.summary()


def make_dataset(n_structures=96, n_atoms=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    pos = torch.randn(n_structures, n_atoms, 3, generator=g)
    energy = (pos ** 2).sum(dim=(1, 2)) * 0.5
    forces = -pos
    return TensorDataset(pos, energy, forces)


def main():
    device = init_process_group()
    torch.manual_seed(0)
    model = EnergyForceNet().to(device)
    ds = make_dataset()
    loader = DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds, shuffle=False))
    metrics = validate(model, loader, device)
    if dist.get_rank() == 0:
        print({k: round(v, 4) for k, v in metrics.items()})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
