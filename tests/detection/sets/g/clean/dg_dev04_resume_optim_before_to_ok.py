# twin of: bugs/dg_dev04_resume_optim_before_to.py
# area: device placement
# correct: the model is moved to the device before the optimizer state is loaded, so load_state_dict casts the moments onto the parameters' device
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class TabularMLP(nn.Module):
    def __init__(self, n_features=20, hidden=64, n_out=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.out(self.body(x))


class Trainer:
    def __init__(self, ckpt_dir, resume=False, lr=1e-3):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.ckpt_path = os.path.join(ckpt_dir, "last.pt")
        self.model = TabularMLP()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.epoch = 0
        self.setup()
        if resume:
            self.restore()

    def restore(self):
        ckpt = torch.load(self.ckpt_path, map_location="cpu")
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.epoch = ckpt["epoch"]

    def setup(self):
        self.model.to(self.device)

    def save(self):
        torch.save({"model": self.model.state_dict(),
                    "optimizer": self.optimizer.state_dict(),
                    "epoch": self.epoch}, self.ckpt_path)

    def fit(self, x, y, epochs, batch_size=32):
        x, y = x.to(self.device), y.to(self.device)
        for _ in range(epochs):
            self.model.train()
            perm = torch.randperm(x.shape[0], device=self.device)
            total = torch.zeros((), device=self.device)
            for i in range(0, x.shape[0], batch_size):
                idx = perm[i:i + batch_size]
                loss = F.cross_entropy(self.model(x[idx]), y[idx])
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                total += loss.detach()
            self.epoch += 1
            print(f"epoch {self.epoch}: mean loss {(total / (x.shape[0] // batch_size)).item():.4f}")
        self.save()


def make_data(n=256, n_features=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, n_features, generator=g)
    w = torch.randn(n_features, 3, generator=g)
    y = (x @ w).argmax(dim=1)
    return x, y


def main():
    torch.manual_seed(0)
    x, y = make_data()
    with tempfile.TemporaryDirectory() as tmp:
        first = Trainer(tmp)
        first.fit(x, y, epochs=2)
        del first
        resumed = Trainer(tmp, resume=True)
        print(f"resumed from epoch {resumed.epoch}")
        resumed.fit(x, y, epochs=2)


if __name__ == "__main__":
    main()
