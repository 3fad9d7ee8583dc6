# source: https://github.com/deepmodeling/deepmd-kit/pull/3361
# area: transfer & sync
# bug: the descriptor selects neighbours of each type with boolean-mask indexing inside forward, which calls nonzero and blocks the host on the GPU once per type on every step
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class DescriptorConfig:
    ntypes: int = 3
    nnei: int = 24
    rcut: float = 6.0
    neuron: tuple = (16, 32)
    axis_neuron: int = 4


class EmbeddingNet(nn.Module):
    def __init__(self, neuron):
        super().__init__()
        layers, d_in = [], 1
        for d_out in neuron:
            layers += [nn.Linear(d_in, d_out), nn.Tanh()]
            d_in = d_out
        self.net = nn.Sequential(*layers)

    def forward(self, s):
        return self.net(s)


class SmoothDescriptor(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.filters = nn.ModuleList(EmbeddingNet(cfg.neuron) for _ in range(cfg.ntypes))

    def smooth_weight(self, r):
        x = (r / self.cfg.rcut).clamp(max=1.0)
        return (1.0 / r.clamp_min(1e-6)) * (0.5 * torch.cos(torch.pi * x) + 0.5)

    def forward(self, coord_rel, nei_type):
        # coord_rel: [nf, nloc, nnei, 3], nei_type: [nf, nloc, nnei] (-1 = padding)
        r = coord_rel.norm(dim=-1, keepdim=True)
        s = self.smooth_weight(r)
        env = torch.cat([s, s * coord_rel / r.clamp_min(1e-6)], dim=-1)  # [nf, nloc, nnei, 4]
        gr = env.new_zeros(*env.shape[:-1], self.cfg.neuron[-1])
        for t, filt in enumerate(self.filters):
            sel = nei_type == t
            gr[sel] = filt(s[sel])  # expect: any
        xyz_scatter = torch.einsum("flnd,flnm->fldm", env, gr) / self.cfg.nnei
        sub = xyz_scatter[..., : self.cfg.axis_neuron]
        return torch.einsum("fldm,fldk->flmk", xyz_scatter, sub).flatten(-2)


class EnergyModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.descriptor = SmoothDescriptor(cfg)
        d = cfg.neuron[-1] * cfg.axis_neuron
        self.fitting = nn.Sequential(nn.Linear(d, 64), nn.Tanh(), nn.Linear(64, 1))

    def forward(self, coord_rel, nei_type):
        atomic_e = self.fitting(self.descriptor(coord_rel, nei_type))
        return atomic_e.sum(dim=(1, 2))


def synthetic_frames(cfg, nf, nloc, device):
    coord = torch.randn(nf, nloc, cfg.nnei, 3, device=device) * 2.0
    nei_type = torch.randint(-1, cfg.ntypes, (nf, nloc, cfg.nnei), device=device)
    energy = (coord.norm(dim=-1) < 2.5).float().sum(dim=(1, 2)) * -0.1
    return coord, nei_type, energy


def train(steps=15):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = DescriptorConfig()
    model = EnergyModel(cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    acc = torch.zeros((), device=device)
    for step in range(steps):
        coord, nei_type, e_ref = synthetic_frames(cfg, nf=4, nloc=16, device=device)
        e_pred = model(coord, nei_type)
        loss = ((e_pred - e_ref) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        acc += loss.detach()
    print(f"mean energy mse {(acc / steps).item():.4f}")


if __name__ == "__main__":
    train()
