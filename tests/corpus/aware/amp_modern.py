"""Mixed precision with the torch.amp API: float16 with a GradScaler on CUDA, bfloat16
autocast without scaling on the CPU, and the device type passed to both."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    device_type = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device_type)
    amp_dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(160, 12, generator=g)
    y = (x[:, :6].sum(1) * x[:, 6:].sum(1)).unsqueeze(1).tanh()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, pin_memory=device_type == "cuda")
    model = nn.Sequential(nn.Linear(12, 64), nn.GELU(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scaler = torch.amp.GradScaler(device_type, enabled=device_type == "cuda")
    for epoch in range(3):
        for xb, yb in loader:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device_type, dtype=amp_dtype):
                loss = nn.functional.mse_loss(model(xb).float(), yb)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    with torch.no_grad():
        final = nn.functional.mse_loss(model(x.to(device)), y.to(device))
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
