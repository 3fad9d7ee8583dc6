# source: https://github.com/TorchSim/torch-sim/issues/440
# area: device placement
# bug: the wrapper calls fold_batchnorm without a device, so the folded layers are rebuilt with the default device="cpu" after the model was already moved to the GPU
import torch
import torch.nn as nn


class DescriptorMLP(nn.Module):
    def __init__(self, n_in=8, hidden=64):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(n_in, hidden), nn.BatchNorm1d(hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.layers(x)


def fold_batchnorm(model, device="cpu"):  # expect[w]: any
    """Fold eval-mode BatchNorm1d layers into the preceding Linear layers."""
    folded, mods, i = [], list(model.layers), 0
    while i < len(mods):
        m = mods[i]
        if isinstance(m, nn.Linear) and i + 1 < len(mods) and isinstance(mods[i + 1], nn.BatchNorm1d):
            bn = mods[i + 1]
            scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            new = nn.Linear(m.in_features, m.out_features, device=device)
            with torch.no_grad():
                new.weight.copy_(m.weight * scale[:, None])
                new.bias.copy_((m.bias - bn.running_mean) * scale + bn.bias)
            folded.append(new)
            i += 2
        else:
            folded.append(m)
            i += 1
    model.layers = nn.Sequential(*folded)
    return model


class EnergyCalculator:
    def __init__(self, model, device=None, fold_bn=True):
        self._device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self._device).eval()
        if fold_bn:
            self.model = fold_batchnorm(self.model)  # expect[w]: any

    @staticmethod
    def descriptors(positions):
        d = torch.cdist(positions, positions)
        mask = ~torch.eye(positions.shape[1], dtype=torch.bool, device=positions.device)
        d = d[:, mask].view(positions.shape[0], positions.shape[1], -1)
        centers = torch.linspace(0.5, 4.0, 8, device=positions.device)
        return torch.exp(-(d[..., None] - centers) ** 2).sum(dim=2)

    @torch.no_grad()
    def __call__(self, positions):
        positions = positions.to(self._device)
        feats = self.descriptors(positions)
        n, a, f = feats.shape
        per_atom = self.model(feats.view(n * a, f)).view(n, a)
        return per_atom.sum(dim=1)


def main():
    torch.manual_seed(0)
    net = DescriptorMLP()
    net.train()
    for _ in range(3):
        net(torch.randn(64, 8))
    calc = EnergyCalculator(net, fold_bn=True)
    structures = torch.rand(5, 16, 3) * 6.0
    energies = calc(structures)
    print("energies:", energies.cpu().numpy().round(3))


if __name__ == "__main__":
    main()
