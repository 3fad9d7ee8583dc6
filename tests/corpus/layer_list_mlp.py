"""An MLP whose hidden layers live in plain Python lists, built with .append and with +.

The author noticed that model.parameters() missed those layers and collects the
parameters for the optimizer by hand, so the program trains every layer.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class DeepMLP(nn.Module):
    def __init__(self, sizes, head_layers=2):
        super().__init__()
        self.hidden = []
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            self.hidden.append(nn.Linear(n_in, n_out))
        self.head = []
        for _ in range(head_layers - 1):
            self.head = self.head + [nn.Linear(sizes[-1], sizes[-1])]
        self.head = self.head + [nn.Linear(sizes[-1], 1)]

    def forward(self, x):
        for layer in self.hidden:
            x = F.relu(layer(x))
        for layer in self.head[:-1]:
            x = torch.tanh(layer(x))
        return self.head[-1](x)

    def trainable_parameters(self):
        params = []
        for layer in self.hidden + self.head:
            params += list(layer.parameters())
        return params


def target_function(x):
    return (x[:, :1] * x[:, 1:2]).sin() + 0.3 * x[:, 2:3]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 24, 24, 16])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(200, args.sizes[0])
    y = target_function(x)
    model = DeepMLP(args.sizes)
    optimizer = torch.optim.Adam(model.trainable_parameters(), lr=5e-3)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.5f}")
    x_test = torch.randn(100, args.sizes[0])
    with torch.no_grad():
        final = F.mse_loss(model(x_test), target_function(x_test))
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
