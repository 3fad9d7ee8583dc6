# source: https://github.com/pytorch/pytorch/issues/114458
# area: AMP
# bug: evaluate() was copied from the CPU inference script and opens torch.autocast(device_type="cpu"); once the model and batches live on CUDA that context does nothing, so validation silently runs in full fp32 instead of mixed precision
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"


class PatchClassifier(nn.Module):
    def __init__(self, dim=64, classes=10):
        super().__init__()
        self.embed = nn.Conv2d(3, dim, 4, stride=4)
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        tokens = self.embed(x).flatten(2).transpose(1, 2)
        return self.head(self.encoder(tokens).mean(1))


@torch.inference_mode()
def evaluate(model, loader):
    model.eval()
    correct, seen = torch.zeros((), device=device), 0
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):  # expect: any
            logits = model(x)
        correct += (logits.argmax(-1) == y).sum()
        seen += y.numel()
    return (correct / seen).item()


def make_split(n):
    x = torch.randn(n, 3, 32, 32)
    y = (x[:, 0].mean((1, 2)) * 20).long().clamp(-5, 4) + 5
    return DataLoader(TensorDataset(x, y), batch_size=32, shuffle=n > 100)


train_loader, val_loader = make_split(256), make_split(96)
model = PatchClassifier().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)

for epoch in range(2):
    model.train()
    for x, y in train_loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
            loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print(f"epoch {epoch} loss {loss.item():.3f} val_acc {evaluate(model, val_loader):.3f}")
