# source: https://github.com/facebookresearch/fairchem/pull/2193
# area: transfer & sync
# bug: each task's loss selects its samples with a boolean mask and branches on the count, a device->host sync per task on every step
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

TASKS = ("energy", "forces_norm", "stress")


class MultiTaskLoss(nn.Module):
    """Mean squared error per task, only over the systems whose dataset labels that task."""

    def __init__(self, coefficients, task_datasets):
        super().__init__()
        self.coefficients = coefficients
        self.task_datasets = task_datasets

    def forward(self, preds, targets, dataset_ids):
        total = preds[TASKS[0]].new_zeros(())
        for name in TASKS:
            mask = torch.isin(dataset_ids, self.task_datasets[name])
            err = (preds[name] - targets[:, TASKS.index(name)]).pow(2)
            valid = err[mask]  # expect[m]: any
            if valid.numel() == 0:  # expect[m]: any
                continue
            total = total + self.coefficients[name] * valid.mean()
        return total


class AtomisticMLP(nn.Module):
    def __init__(self, in_dim=32, hidden=128):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(in_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.heads = nn.ModuleDict({name: nn.Linear(hidden, 1) for name in TASKS})

    def forward(self, x):
        h = self.trunk(x)
        return {name: head(h).squeeze(-1) for name, head in self.heads.items()}


def make_mixed_dataset(n=1024, in_dim=32, num_datasets=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, in_dim, generator=g)
    dataset_ids = torch.randint(0, num_datasets, (n,), generator=g)
    w = torch.randn(in_dim, len(TASKS), generator=g)
    y = x @ w + 0.05 * torch.randn(n, len(TASKS), generator=g)
    return TensorDataset(x, y, dataset_ids)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    task_datasets = {
        "energy": torch.tensor([0, 1, 2], device=device),
        "forces_norm": torch.tensor([0, 1], device=device),
        "stress": torch.tensor([2], device=device),
    }
    coefficients = {"energy": 1.0, "forces_norm": 10.0, "stress": 0.5}
    criterion = MultiTaskLoss(coefficients, task_datasets)
    model = AtomisticMLP().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(make_mixed_dataset(), batch_size=64, shuffle=True)

    for epoch in range(2):
        epoch_loss = torch.zeros((), device=device)
        for x, y, ds in loader:
            x, y, ds = x.to(device), y.to(device), ds.to(device)
            opt.zero_grad(set_to_none=True)
            loss = criterion(model(x), y, ds)
            loss.backward()
            opt.step()
            epoch_loss += loss.detach()
        print(f"epoch {epoch}: loss {(epoch_loss / len(loader)).item():.4f}")


if __name__ == "__main__":
    main()
