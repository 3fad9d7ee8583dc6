"""Checkpointing on whatever device trains: torch.load with map_location, the optimizer
state moved to the device by a helper after loading, and a CPU copy for export."""

import os
import tempfile

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def optimizer_to(optimizer, device):
    for state in optimizer.state.values():
        for key, value in state.items():
            if torch.is_tensor(value):
                state[key] = value.to(device)


def make_model():
    return nn.Sequential(nn.Linear(5, 20), nn.Softplus(), nn.Linear(20, 1))


def train(model, optimizer, x, y, steps):
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    return loss.item()


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(100, 5, generator=g).to(device)
    y = (x ** 2).sum(1, keepdim=True).sqrt()
    model = make_model().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    train(model, optimizer, x, y, 20)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "ckpt.pth")
        torch.save({"model": model.state_dict(), "optim": optimizer.state_dict(), "step": 20}, path)
        cpu_weights = {k: v.cpu() for k, v in model.state_dict().items()}
        torch.save(cpu_weights, os.path.join(folder, "export.pth"))

        checkpoint = torch.load(path, map_location="cpu")
        resumed = make_model()
        resumed.load_state_dict(checkpoint["model"])
        resumed.to(device)
        optimizer = torch.optim.Adam(resumed.parameters(), lr=0.01)
        optimizer.load_state_dict(checkpoint["optim"])
        optimizer_to(optimizer, device)
        exported = torch.load(os.path.join(folder, "export.pth"), map_location=device)
    assert all(torch.equal(exported[k], v) for k, v in resumed.state_dict().items())
    loss = train(resumed, optimizer, x, y, 20)
    print(f"final loss {loss:.8f}")


if __name__ == "__main__":
    main()
