# source: https://github.com/pytorch/pytorch/issues/39062
# area: device placement
# bug: nn.Parameter(...).to(device) returns a plain non-leaf tensor on GPU, so the temperature is not registered, not optimised and not saved
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TemperatureScaledClassifier(nn.Module):
    """MLP classifier with a learnable softmax temperature (calibration trick)."""

    def __init__(self, in_dim, n_classes, hidden=32):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_classes)
        )
        # learnable log-temperature, created directly "on the right device"
        self.log_temp = nn.Parameter(torch.zeros(1)).to(device)  # expect: any

    def forward(self, x):
        logits = self.backbone(x)
        return logits / self.log_temp.exp()


def make_data(n=256, in_dim=10, n_classes=3):
    x = torch.randn(n, in_dim)
    w = torch.randn(in_dim, n_classes)
    y = (x @ w).argmax(dim=1)
    return TensorDataset(x, y)


def train_epoch(model, loader, optimizer):
    model.train()
    total = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * x.size(0)
    return total / len(loader.dataset)


def main():
    ds = make_data()
    loader = DataLoader(ds, batch_size=32, shuffle=True)
    model = TemperatureScaledClassifier(10, 3).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print("trainable parameters:", n_params)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        loss = train_epoch(model, loader, optimizer)
        print(f"epoch {epoch} loss {loss:.4f} temp {model.log_temp.exp().item():.3f}")
    print("state_dict keys:", list(model.state_dict().keys()))


if __name__ == "__main__":
    main()
