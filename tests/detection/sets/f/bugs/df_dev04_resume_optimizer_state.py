# source: https://github.com/pytorch/pytorch/issues/34470
# area: device placement
# bug: on resume the optimizer state is loaded while the parameters are still on the CPU (load_state_dict casts Adam's moments to the CPU), and only afterwards is the model moved to the GPU, so optimizer.step() mixes CPU exp_avg with CUDA grads
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class RegressionMLP(nn.Module):
    def __init__(self, in_dim=16, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


class Trainer:
    def __init__(self, ckpt_dir, device, lr=1e-3):
        self.ckpt_path = os.path.join(ckpt_dir, "last.pt")
        self.device = device
        self.model = RegressionMLP()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.start_epoch = 0
        if os.path.exists(self.ckpt_path):
            self._resume()
        self.model.to(self.device)  # expect[w]: any

    def _resume(self):
        ckpt = torch.load(self.ckpt_path, map_location="cpu")
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])  # expect[w]: any
        self.start_epoch = ckpt["epoch"] + 1
        print(f"resumed from epoch {ckpt['epoch']}")

    def save(self, epoch):
        torch.save({
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "epoch": epoch,
        }, self.ckpt_path)

    def fit(self, x, y, epochs, batch_size=64):
        n = x.shape[0]
        for epoch in range(self.start_epoch, self.start_epoch + epochs):
            perm = torch.randperm(n, device=self.device)
            total = torch.zeros((), device=self.device)
            for i in range(0, n, batch_size):
                idx = perm[i:i + batch_size]
                loss = F.mse_loss(self.model(x[idx]), y[idx])
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                total += loss.detach() * idx.numel()
            print(f"epoch {epoch}: mse {(total / n).item():.4f}")
            self.save(epoch)


def make_data(n, device):
    w = torch.linspace(-1, 1, 16)
    x = torch.randn(n, 16)
    y = torch.tanh(x @ w) + 0.05 * torch.randn(n)
    return x.to(device), y.to(device)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x, y = make_data(1024, device)
    with tempfile.TemporaryDirectory() as ckpt_dir:
        first = Trainer(ckpt_dir, device)
        first.fit(x, y, epochs=2)
        resumed = Trainer(ckpt_dir, device)
        resumed.fit(x, y, epochs=2)


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
