# source: https://github.com/facebookresearch/fairchem/pull/617
# area: AMP
# bug: the logged loss is recovered by dividing the scaled loss by scaler.get_scale() read after _backward() has already run scaler.update(), so on CUDA every step where the scale grew or backed off logs a loss that is off by the growth/backoff factor
import torch
import torch.nn as nn
import torch.nn.functional as F


class RunningMeter:
    def __init__(self, device):
        self.total = torch.zeros((), device=device)
        self.count = 0

    def update(self, value):
        self.total += value
        self.count += 1

    def average(self):
        return (self.total / max(self.count, 1)).item()


class AtomEnergyModel(nn.Module):
    def __init__(self, n_species=6, hidden=32):
        super().__init__()
        self.embed = nn.Embedding(n_species, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden + 3, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, species, positions):
        per_atom = self.mlp(torch.cat([self.embed(species), positions], dim=-1)).squeeze(-1)
        return per_atom.sum(dim=1)


class EnergyTrainer:
    def __init__(self, model, device, amp, lr=1e-3, clip_grad_norm=10.0):
        self.model = model
        self.device = device
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.scaler = torch.amp.GradScaler("cuda", growth_interval=4) if amp else None
        self.clip_grad_norm = clip_grad_norm
        self.meter = RunningMeter(device)

    def _compute_loss(self, pred, target):
        return F.l1_loss(pred.float(), target)

    def _backward(self, loss):
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_grad_norm)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()

    def train_epoch(self, loader):
        self.model.train()
        self.meter = RunningMeter(self.device)
        for species, positions, energy in loader:
            species, positions, energy = species.to(self.device), positions.to(self.device), energy.to(self.device)
            with torch.autocast(device_type=self.device.type, enabled=self.scaler is not None):
                pred = self.model(species, positions)
                loss = self._compute_loss(pred, energy)
            loss = self.scaler.scale(loss) if self.scaler is not None else loss
            self._backward(loss)
            scale = self.scaler.get_scale() if self.scaler is not None else 1.0  # expect: any
            self.meter.update(loss.detach() / scale)
        return self.meter.average()


def make_loader(n=96, atoms=10, n_species=6, batch_size=16):
    g = torch.Generator().manual_seed(11)
    species = torch.randint(0, n_species, (n, atoms), generator=g)
    positions = torch.randn(n, atoms, 3, generator=g)
    energy = (species.float() * 0.3 + positions.norm(dim=-1)).sum(dim=1)
    ds = torch.utils.data.TensorDataset(species, positions, energy)
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True, generator=g)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainer = EnergyTrainer(AtomEnergyModel().to(device), device, amp=device.type == "cuda")
    loader = make_loader()
    for epoch in range(2):
        print(f"epoch {epoch}: train energy MAE {trainer.train_epoch(loader):.3f}")
