# source: https://github.com/engichang1467/Open-Rig3R/issues/35
# area: AMP
# bug: training runs under float16 autocast but calls loss.backward() on the unscaled loss (no GradScaler), so small gradients underflow to zero in fp16 on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"


class PairDataset(Dataset):
    """Pairs of noisy views of the same latent vector (contrastive pretraining)."""

    def __init__(self, n=128, dim=24):
        self.latent = torch.randn(n, dim)

    def __len__(self):
        return len(self.latent)

    def __getitem__(self, idx):
        z = self.latent[idx]
        return z + 0.1 * torch.randn_like(z), z + 0.1 * torch.randn_like(z)


class Encoder(nn.Module):
    def __init__(self, dim=24, hidden=64, out=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.LayerNorm(hidden), nn.GELU(), nn.Linear(hidden, out))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def info_nce(a, b, temperature=0.1):
    logits = a @ b.T / temperature
    labels = torch.arange(len(a), device=a.device)
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2


def fit(model, loader, epochs=3, lr=1e-3):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05)
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for v1, v2 in loader:
            v1, v2 = v1.to(device), v2.to(device)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):  # expect[noscale]: any
                loss = info_nce(model(v1), model(v2))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # expect[noscale]: any
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / len(loader):.4f}")


if __name__ == "__main__":
    loader = DataLoader(PairDataset(), batch_size=32, shuffle=True, drop_last=True)
    model = Encoder().to(device)
    fit(model, loader)
