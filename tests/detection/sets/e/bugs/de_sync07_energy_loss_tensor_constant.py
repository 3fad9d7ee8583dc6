# source: https://github.com/deepmodeling/deepmd-kit/pull/3421
# area: transfer & sync
# bug: the loss forward builds its accumulator with torch.tensor(0.0, device=...) every call, a host-to-device copy from pageable memory that blocks each training step
import torch
import torch.nn as nn


class PairEnergyModel(nn.Module):
    """Sums a learned pair potential over all atom pairs of each frame."""

    def __init__(self, hidden=32):
        super().__init__()
        self.pair = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, coord):
        coord = coord.requires_grad_(True)
        diff = coord.unsqueeze(2) - coord.unsqueeze(1)
        n = coord.size(1)
        iu = torch.triu_indices(n, n, offset=1, device=coord.device)
        dist = diff[:, iu[0], iu[1]].norm(dim=-1, keepdim=True)
        energy = self.pair(dist).sum(dim=(1, 2))
        force = -torch.autograd.grad(energy.sum(), coord, create_graph=True)[0]
        return {"energy": energy, "force": force}


class EnergyForceLoss(nn.Module):
    def __init__(self, start_lr, start_pref_e=0.02, limit_pref_e=1.0,
                 start_pref_f=1000.0, limit_pref_f=1.0):
        super().__init__()
        self.start_lr = start_lr
        self.start_pref_e, self.limit_pref_e = start_pref_e, limit_pref_e
        self.start_pref_f, self.limit_pref_f = start_pref_f, limit_pref_f

    def forward(self, lr, pred, label, natoms):
        coef = lr / self.start_lr
        pref_e = self.limit_pref_e + (self.start_pref_e - self.limit_pref_e) * coef
        pref_f = self.limit_pref_f + (self.start_pref_f - self.limit_pref_f) * coef
        dtype, device = pred["energy"].dtype, pred["energy"].device
        loss = torch.tensor(0.0, dtype=dtype, device=device)  # expect: any
        more = {}
        l2_e = (pred["energy"] - label["energy"]).square().mean()
        loss = loss + pref_e / natoms * l2_e
        more["rmse_e"] = l2_e.detach().sqrt() / natoms
        l2_f = (pred["force"] - label["force"]).square().mean()
        loss = loss + pref_f * l2_f
        more["rmse_f"] = l2_f.detach().sqrt()
        return loss, more


def reference_frames(n_frames, natoms, seed=0):
    g = torch.Generator().manual_seed(seed)
    coord = torch.rand(n_frames, natoms, 3, generator=g) * 4.0
    c = coord.clone().requires_grad_(True)
    d = (c.unsqueeze(2) - c.unsqueeze(1)).norm(dim=-1) + torch.eye(natoms)
    e = (torch.exp(-d) * (1 - torch.eye(natoms))).sum(dim=(1, 2)) / 2
    f = -torch.autograd.grad(e.sum(), c)[0]
    return coord, e.detach(), f.detach()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    natoms, start_lr = 8, 1e-3
    coord, energy, force = reference_frames(64, natoms)
    model = PairEnergyModel().to(device)
    loss_fn = EnergyForceLoss(start_lr)
    opt = torch.optim.Adam(model.parameters(), lr=start_lr)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.98)
    for step in range(60):
        idx = torch.randint(0, coord.size(0), (16,))
        c = coord[idx].to(device)
        label = {"energy": energy[idx].to(device), "force": force[idx].to(device)}
        pred = model(c)
        loss, more = loss_fn(sched.get_last_lr()[0], pred, label, natoms)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % 20 == 19:
            print(f"step {step + 1}: rmse_e={more['rmse_e'].item():.4f} rmse_f={more['rmse_f'].item():.4f}")


if __name__ == "__main__":
    main()
