# source: https://github.com/pytorch/pytorch/issues/74739
# area: AMP
# bug: the model itself is cast with .half() and then trained with autocast + GradScaler; the parameters' gradients are fp16 and scaler.step() raises "Attempting to unscale FP16 gradients" (AMP needs fp32 master weights)
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
config = {"fp16": torch.cuda.is_available(), "lr": 3e-3, "epochs": 3, "batch_size": 32}


class Classifier(nn.Module):
    def __init__(self, in_dim=20, hidden=64, n_classes=5):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, n_classes)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.drop(F.relu(self.fc1(x)))
        x = self.drop(F.relu(self.fc2(x)))
        return self.out(x)


def build_model(cfg):
    model = Classifier().to(device)
    if cfg["fp16"]:
        model = model.half()  # expect: any
    return model


def train(model, loader, cfg):
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    scaler = torch.amp.GradScaler("cuda", enabled=cfg["fp16"])
    for epoch in range(cfg["epochs"]):
        model.train()
        running = 0.0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=cfg["fp16"]):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            running += loss.item()
        print(f"epoch {epoch}: loss {running / len(loader):.4f}")


if __name__ == "__main__":
    X = torch.randn(320, 20)
    y = (X[:, :5] * torch.arange(1, 6)).argmax(1)
    loader = DataLoader(TensorDataset(X, y), batch_size=config["batch_size"], shuffle=True)
    model = build_model(config)
    train(model, loader, config)
