# twin of: bugs/ca_dev06_resume_optimizer_before_to.py
# area: device placement
# correct: the model is moved before the optimizer is built and loaded, so load_state_dict casts the CPU-mapped Adam state onto the parameters' device
import os
import tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def make_data(n=256):
    x = torch.randn(n, 8)
    y = x[:, :3].sum(dim=1) + 0.1 * torch.randn(n)
    return x, y


def train_steps(model, optimizer, x, y, steps):
    for _ in range(steps):
        idx = torch.randint(0, x.size(0), (32,))
        loss = F.mse_loss(model(x[idx].to(device)), y[idx].to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)


def resume(path):
    ckpt = torch.load(path, map_location="cpu")
    model = Regressor()
    model.load_state_dict(ckpt["model"])
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    optimizer.load_state_dict(ckpt["optimizer"])
    return model, optimizer, ckpt["epoch"]


def main():
    x, y = make_data()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "last.pt")
        model = Regressor().to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        print("first run loss", train_steps(model, optimizer, x, y, 20))
        save_checkpoint(path, model, optimizer, epoch=1)
        del model, optimizer

        model, optimizer, start = resume(path)
        for epoch in range(start, start + 2):
            print(f"epoch {epoch} loss {train_steps(model, optimizer, x, y, 20):.4f}")


if __name__ == "__main__":
    main()
