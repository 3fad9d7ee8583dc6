"""Contrastive pre-training (SimCLR's NT-Xent loss) on vectors, then a linear probe.

The augmentation helper draws its noise and masks from scratch; the loss builds its
labels with torch.arange and masks the diagonal with torch.eye."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def augment(x, jitter=0.3, drop=0.2):
    noise = jitter * torch.randn(x.shape)
    keep = (torch.rand(x.size(0), x.size(1)) > drop).float()
    return (x + noise) * keep


def nt_xent(z1, z2, temperature=0.5):
    n = z1.size(0)
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
    sim = z @ z.t() / temperature
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    labels = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, labels)


class Encoder(nn.Module):
    def __init__(self, dim_in=16, dim_rep=12, dim_proj=8):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(dim_in, 32), nn.ReLU(), nn.Linear(32, dim_rep))
        self.projector = nn.Sequential(nn.ReLU(), nn.Linear(dim_rep, dim_proj))

    def forward(self, x):
        return self.projector(self.backbone(x))


def make_clusters(n, generator, k=4, dim=16):
    centers = torch.randn(k, dim, generator=generator) * 2
    labels = torch.arange(n) % k
    return centers[labels] + torch.randn(n, dim, generator=generator), labels


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x, labels = make_clusters(192, g)
    model = Encoder()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(3):
        perm = torch.randperm(x.size(0), generator=g)
        for i in range(0, x.size(0), 32):
            batch = x[perm[i : i + 32]]
            loss = nt_xent(model(augment(batch)), model(augment(batch)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} contrastive loss {loss.item():.4f}")
    with torch.no_grad():
        features = model.backbone(x)
    probe = nn.Linear(features.size(1), 4)
    probe_opt = torch.optim.SGD(probe.parameters(), lr=0.5)
    for _ in range(30):
        probe_opt.zero_grad()
        probe_loss = F.cross_entropy(probe(features), labels)
        probe_loss.backward()
        probe_opt.step()
    print(f"final loss {probe_loss.item():.8f}")


if __name__ == "__main__":
    main()
