# source: https://github.com/pytorch/pytorch/issues/74739
# area: AMP
# bug: build_model casts the whole model to fp16 on GPU "to save memory" while the loop also uses autocast + GradScaler; the parameters' grads are fp16 and scaler.step raises "Attempting to unscale FP16 gradients"
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"


class SequenceDataset(Dataset):
    def __init__(self, n=200, seq=16, feats=8):
        self.x = torch.randn(n, seq, feats)
        self.y = (self.x.sum(dim=(1, 2)) > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class ConvEncoder(nn.Module):
    def __init__(self, feats=8, hid=32, classes=2):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(feats, hid, 3, padding=1), nn.GELU(), nn.Conv1d(hid, hid, 3, padding=1), nn.GELU()
        )
        self.fc = nn.Linear(hid, classes)

    def forward(self, x):
        h = self.conv(x.transpose(1, 2)).mean(-1)
        return self.fc(h)


def build_model(cfg):
    model = ConvEncoder(cfg["feats"], cfg["hidden"])
    model = model.to(device)
    if cfg["low_memory"] and device.type == "cuda":
        model = model.half()  # expect[half]: any
    return model


cfg = {"feats": 8, "hidden": 32, "low_memory": True, "lr": 1e-3}
model = build_model(cfg)
optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
loader = DataLoader(SequenceDataset(), batch_size=32, shuffle=True)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(3):
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)  # expect[half]: any
        scaler.update()
    print(f"epoch {epoch}: loss={loss.item():.4f}")
