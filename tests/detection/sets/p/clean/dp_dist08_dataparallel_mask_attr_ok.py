# twin of: bugs/dp_dist08_dataparallel_mask_attr.py
# area: porting & distributed
# correct: the pruning mask is registered as a buffer, so nn.DataParallel broadcasts it to every replica's device together with the weights
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class MaskedLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        self.register_buffer("mask", None)

    def set_mask(self, mask):
        self.mask = mask.to(device=self.weight.device, dtype=self.weight.dtype)

    @property
    def weight_masked(self):
        return self.weight if self.mask is None else self.weight * self.mask

    def forward(self, x):
        return F.linear(x, self.weight_masked, self.bias)


class PrunableMLP(nn.Module):
    def __init__(self, d_in=20, hidden=64, n_classes=3):
        super().__init__()
        self.fc1 = MaskedLinear(d_in, hidden)
        self.fc2 = MaskedLinear(hidden, hidden)
        self.out = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.out(F.relu(self.fc2(F.relu(self.fc1(x)))))


@torch.no_grad()
def magnitude_prune(model, sparsity):
    for module in model.modules():
        if isinstance(module, MaskedLinear):
            w = module.weight.abs().flatten()
            k = max(int(sparsity * w.numel()), 1)
            threshold = w.kthvalue(k).values
            module.set_mask((module.weight.abs() > threshold).float())


def make_loader(n=1024, d_in=20):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, d_in, generator=g)
    y = (x[:, :3].argmax(dim=1))
    return DataLoader(TensorDataset(x, y), batch_size=128, shuffle=True,
                      pin_memory=torch.cuda.is_available())


def run_epochs(model, loader, device, epochs, lr=1e-2):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for _ in range(epochs):
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()


@torch.no_grad()
def accuracy(model, loader, device):
    correct = torch.zeros((), device=device, dtype=torch.long)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        correct += (model(x).argmax(1) == y).sum()
    return correct.item() / len(loader.dataset)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    base = PrunableMLP().to(device)
    loader = make_loader()
    run_epochs(base, loader, device, epochs=2)
    magnitude_prune(base, sparsity=0.7)
    model = nn.DataParallel(base) if torch.cuda.device_count() > 1 else base
    run_epochs(model, loader, device, epochs=2)
    print(f"accuracy after pruning + fine-tuning: {accuracy(model, loader, device):.3f}")


if __name__ == "__main__":
    main()
