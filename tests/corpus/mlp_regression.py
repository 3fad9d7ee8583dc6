"""Full-batch MLP regression on synthetic tensors: no DataLoader, data made in main."""

import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, inputs=8, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def main():
    torch.manual_seed(0)
    X = torch.randn(256, 8)
    w = torch.randn(8)
    Y = X @ w + 0.1 * torch.randn(256)
    model = MLP()
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(30):
        optimizer.zero_grad()
        loss = loss_fn(model(X), Y)
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.8f}")


if __name__ == "__main__":
    main()
