# source: https://github.com/facebookresearch/fairchem/issues/2195
# area: transfer & sync
# bug: each task's loss reduction counts valid samples with loss[mask].numel(), a data-dependent boolean index that reads the device back once per task per step
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

DATASETS = ["omol", "omat", "oc20", "odac"]
TASKS = {
    "omol_energy": ("omol", "energy", 1), "omol_dipole": ("omol", "dipole", 3),
    "omat_energy": ("omat", "energy", 1), "omat_stress": ("omat", "stress", 6),
    "oc20_energy": ("oc20", "energy", 1), "odac_energy": ("odac", "energy", 1),
}


class MaskedTaskLoss(nn.Module):
    def __init__(self, coefficient=1.0, kind="mae"):
        super().__init__()
        self.coefficient = coefficient
        self.kind = kind

    def _reduction(self, loss, mult_mask):
        loss = loss * mult_mask
        num_samples = loss[mult_mask].numel()  # expect: any
        return loss.sum() / max(num_samples, 1)

    def forward(self, pred, target, mult_mask):
        if self.kind == "mae":
            per_sample = (pred - target).abs()
        else:
            per_sample = (pred - target).pow(2)
        per_sample = per_sample.reshape(per_sample.shape[0], -1).mean(dim=1)
        return self.coefficient * self._reduction(per_sample, mult_mask)


class MultiHeadPotential(nn.Module):
    def __init__(self, in_dim=32, hidden=128):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(in_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.heads = nn.ModuleDict({name: nn.Linear(hidden, dim) for name, (_, _, dim) in TASKS.items()})

    def forward(self, x):
        h = self.backbone(x)
        return {name: head(h) for name, head in self.heads.items()}


def get_output_mask(dataset_idx, task_name):
    ds = TASKS[task_name][0]
    return dataset_idx == DATASETS.index(ds)


def make_batch(n=96, in_dim=32):
    x = torch.randn(n, in_dim, device=device)
    dataset_idx = torch.randint(0, len(DATASETS), (n,), device=device)
    targets = {name: torch.randn(n, dim, device=device) for name, (_, _, dim) in TASKS.items()}
    return x, dataset_idx, targets


def compute_loss(outputs, dataset_idx, targets, loss_fns):
    total = 0.0
    for name, fn in loss_fns.items():
        mask = get_output_mask(dataset_idx, name)
        total = total + fn(outputs[name], targets[name], mask)
    return total


def main():
    torch.manual_seed(0)
    model = MultiHeadPotential().to(device)
    loss_fns = {name: MaskedTaskLoss(coefficient=(10.0 if kind == "energy" else 1.0),
                                     kind=("mae" if kind == "energy" else "mse"))
                for name, (_, kind, _) in TASKS.items()}
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    history = []
    for step in range(50):
        x, dataset_idx, targets = make_batch()
        loss = compute_loss(model(x), dataset_idx, targets, loss_fns)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        history.append(loss.detach())
    print("first/last loss:", torch.stack(history)[[0, -1]].tolist())


if __name__ == "__main__":
    main()
