"""The forward-forward algorithm: each layer owns its optimizer (self.opt = Adam(...)),
the layers are kept in a plain list grown with +, labels are overlaid on the inputs,
and negative examples use labels shuffled with torch.randperm."""

import argparse

import torch
import torch.nn as nn
from torch.optim import Adam

N_CLASSES = 4


def make_data(n, generator):
    labels = torch.randint(0, N_CLASSES, (n,), generator=generator)
    centers = torch.randn(N_CLASSES, 12, generator=generator)
    x = centers[labels] + 0.4 * torch.randn(n, 12, generator=generator)
    x = torch.cat([torch.zeros(n, N_CLASSES), x], dim=1)
    return x, labels


def overlay_y_on_x(x, y):
    x_ = x.clone()
    x_[:, :N_CLASSES] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, lr, threshold, epochs):
        super().__init__(in_features, out_features)
        self.relu = nn.ReLU()
        self.opt = Adam(self.parameters(), lr=lr)
        self.threshold = threshold
        self.num_epochs = epochs

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train_layer(self, x_pos, x_neg):
        for _ in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log1p(
                torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))
            ).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        return self.forward(x_pos).detach(), self.forward(x_neg).detach(), loss.item()


class Net(nn.Module):
    def __init__(self, dims, args):
        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1], args.lr, args.threshold, args.epochs)]

    def predict(self, x):
        goodness_per_label = []
        for label in range(N_CLASSES):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        return torch.cat(goodness_per_label, 1)

    def train_layers(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        losses = []
        for layer in self.layers:
            h_pos, h_neg, loss = layer.train_layer(h_pos, h_neg)
            losses.append(loss)
        return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.03)
    parser.add_argument("--threshold", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    x, y = make_data(200, g)
    x_te, y_te = make_data(80, g)
    net = Net([x.size(1), 32, 32], args)
    x_pos = overlay_y_on_x(x, y)
    rnd = torch.randperm(x.size(0))
    x_neg = overlay_y_on_x(x, y[rnd])
    losses = net.train_layers(x_pos, x_neg)
    with torch.no_grad():
        goodness = net.predict(x_te)
    error = 1.0 - goodness.argmax(1).eq(y_te).float().mean().item()
    print(f"layer losses {[round(v, 4) for v in losses]} test error {error:.3f}")
    print(f"final loss {losses[-1]:.8f}")
