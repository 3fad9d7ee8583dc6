# source: https://github.com/facebookresearch/fairchem/pull/269
# area: porting & distributed
# bug: each rank's per-atom force MAE is averaged across GPUs with equal weight, although ranks hold different numbers of atoms, so the reported multi-GPU metric is wrong
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class RandomMolecules(Dataset):
    def __init__(self, n_mols=96, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.mols = []
        for _ in range(n_mols):
            n_atoms = int(torch.randint(3, 40, (1,), generator=g))
            pos = torch.randn(n_atoms, 3, generator=g)
            species = torch.randint(0, 5, (n_atoms,), generator=g)
            forces = -pos * (1.0 + 0.1 * species.unsqueeze(1))
            self.mols.append((pos, species, forces))

    def __len__(self):
        return len(self.mols)

    def __getitem__(self, i):
        return self.mols[i]


def collate_molecules(batch):
    pos, species, forces = zip(*batch)
    return torch.cat(pos), torch.cat(species), torch.cat(forces)


class AtomwiseForceModel(nn.Module):
    def __init__(self, n_species=5, hidden=32):
        super().__init__()
        self.embed = nn.Embedding(n_species, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden + 3, hidden), nn.SiLU(), nn.Linear(hidden, 3))

    def forward(self, pos, species):
        return self.mlp(torch.cat([self.embed(species), pos], dim=-1))


class ForceEvaluator:
    def __init__(self, model, device, distributed):
        self.model, self.device, self.distributed = model, device, distributed

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        abs_err = torch.zeros((), device=self.device)
        n_atoms = torch.zeros((), device=self.device)
        for pos, species, forces in loader:
            pos, species = pos.to(self.device), species.to(self.device)
            forces = forces.to(self.device)
            pred = self.model(pos, species)
            abs_err += (pred - forces).abs().sum()
            n_atoms += forces.numel()
        mae = abs_err / n_atoms
        if self.distributed:
            dist.all_reduce(mae, op=dist.ReduceOp.SUM)  # expect[m]: any
            mae /= dist.get_world_size()  # expect[m]: any
        return mae


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    if distributed:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    torch.manual_seed(0)
    model = AtomwiseForceModel().to(device)
    val_ds = RandomMolecules()
    sampler = DistributedSampler(val_ds, shuffle=False) if distributed else None
    loader = DataLoader(val_ds, batch_size=8, sampler=sampler, collate_fn=collate_molecules)
    mae = ForceEvaluator(model, device, distributed).evaluate(loader)
    if not distributed or dist.get_rank() == 0:
        print(f"val force MAE: {mae.item():.4f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
