# source: https://github.com/pytorch/pytorch/issues/114458
# area: AMP
# bug: the mixed-precision context hard-codes device_type="cpu" while the model and batches live on the GPU, so CUDA ops are never autocast and the "bf16" run silently trains in full fp32
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
AMP_DTYPE = torch.bfloat16


class ResidualMLP(nn.Module):
    def __init__(self, dim=32, depth=3, n_classes=4):
        super().__init__()
        self.inp = nn.Linear(16, dim)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * 2), nn.GELU(),
                                                   nn.Linear(dim * 2, dim)) for _ in range(depth)])
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x):
        x = self.inp(x)
        for blk in self.blocks:
            x = x + blk(x)
        return self.head(x)


def amp_context():
    return torch.autocast(device_type="cpu", dtype=AMP_DTYPE)  # expect: any


def train_epoch(model, loader, optimizer):
    model.train()
    total = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        with amp_context():
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        with amp_context():
            correct += (model(x).argmax(-1) == y).sum().item()
    return correct / len(loader.dataset)


if __name__ == "__main__":
    X = torch.randn(160, 16)
    y = (X[:, :4] - X[:, 4:8]).argmax(-1)
    train_loader = DataLoader(TensorDataset(X[:128], y[:128]), batch_size=32, shuffle=True)
    val_loader = DataLoader(TensorDataset(X[128:], y[128:]), batch_size=64)
    model = ResidualMLP().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    for epoch in range(2):
        loss = train_epoch(model, train_loader, optimizer)
        print(f"epoch {epoch}: loss {loss:.4f} val acc {evaluate(model, val_loader):.3f}")
