# source: https://github.com/Lightning-AI/pytorch-lightning/issues/4840
# area: dtype
# bug: binary_accuracy only thresholds probabilities when preds.dtype == torch.float32; under CUDA fp16 autocast the sigmoid outputs are float16, so raw probabilities are compared to 0/1 targets and validation accuracy silently collapses to ~0
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"


def binary_accuracy(preds, target, threshold=0.5):
    if preds.dtype == torch.float32:  # expect: any
        preds = (preds >= threshold).to(target.dtype)
    return (preds == target).float().mean()


class ClickModel(nn.Module):
    def __init__(self, n_feats=20):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(n_feats, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.mlp(x).squeeze(-1)


TRUE_W = torch.randn(20)


def make_loader(n, shuffle):
    x = torch.randn(n, 20)
    y = (x @ TRUE_W > 0).float()
    return DataLoader(TensorDataset(x, y), batch_size=32, shuffle=shuffle)


@torch.no_grad()
def validate(model, loader):
    model.eval()
    accs = []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
            probs = torch.sigmoid(model(x))
        accs.append(binary_accuracy(probs, y))
    return torch.stack(accs).mean().item()


train_loader, val_loader = make_loader(512, True), make_loader(128, False)
model = ClickModel().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
criterion = nn.BCEWithLogitsLoss()

for epoch in range(3):
    model.train()
    for x, y in train_loader:
        x, y = x.to(device), y.to(device)
        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
            loss = criterion(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print(f"epoch {epoch} loss {loss.item():.4f} val_acc {validate(model, val_loader):.3f}")
