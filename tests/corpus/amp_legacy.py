"""Mixed precision written with the deprecated torch.cuda.amp API (disabled on the CPU)."""

import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    data = torch.randn(96, 6)
    target = data.sum(dim=1, keepdim=True)
    loader = DataLoader(TensorDataset(data, target), batch_size=32)
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    use_amp = torch.cuda.is_available()
    scaler = GradScaler(enabled=use_amp)
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            with torch.cuda.amp.autocast(enabled=use_amp):
                loss = criterion(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    print(f"final loss {loss.item():.8f}")


if __name__ == "__main__":
    main()
