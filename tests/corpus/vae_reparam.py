"""A VAE on 8x8 synthetic digits: reparameterisation noise made from the std's size."""

import argparse

import torch
from torch import nn, optim
from torch.nn import functional as F
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser(description="VAE example")
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--latent", type=int, default=4)
args = parser.parse_args()

torch.manual_seed(args.seed)


def make_strokes(n):
    """Images with one bright row and one bright column, values in [0, 1]."""
    images = torch.zeros(n, 64)
    rows = torch.randint(0, 8, (n,))
    cols = torch.randint(0, 8, (n,))
    for i in range(n):
        img = images[i].view(8, 8)
        img[rows[i], :] = 0.9
        img[:, cols[i]] = 0.9
    return images.clamp(0.05, 0.95)


train_data = make_strokes(128)
test_data = make_strokes(64)
train_loader = DataLoader(train_data, batch_size=args.batch_size, shuffle=True)
test_loader = DataLoader(test_data, batch_size=args.batch_size, shuffle=False)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, args.latent)
        self.fc22 = nn.Linear(32, args.latent)
        self.fc3 = nn.Linear(args.latent, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn(std.size())
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


model = VAE()
optimizer = optim.Adam(model.parameters(), lr=1e-3)


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def train(epoch):
    model.train()
    train_loss = 0
    for data in train_loader:
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    print(f"====> Epoch: {epoch} Average loss: {train_loss / len(train_loader.dataset):.4f}")


def test():
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for data in test_loader:
            mu, logvar = model.encode(data)
            recon = model.decode(mu)
            test_loss += loss_function(recon, data, mu, logvar).item()
    return test_loss / len(test_loader.dataset)


if __name__ == "__main__":
    for epoch in range(1, args.epochs + 1):
        train(epoch)
        test_loss = test()
        with torch.no_grad():
            sample = torch.randn(16, args.latent)
            sample = model.decode(sample)
        print(f"sample mean {sample.mean().item():.4f}")
    print(f"final loss {test_loss:.8f}")
