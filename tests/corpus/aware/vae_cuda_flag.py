"""A VAE written the older way: --no-cuda, args.cuda, a module-level device, and loader
kwargs that carry num_workers and pin_memory only when CUDA is used."""

import argparse

import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F

parser = argparse.ArgumentParser(description="VAE example")
parser.add_argument("--batch-size", type=int, default=32, metavar="N")
parser.add_argument("--epochs", type=int, default=2, metavar="N")
parser.add_argument("--no-cuda", action="store_true", default=False, help="disables CUDA training")
parser.add_argument("--seed", type=int, default=1, metavar="S")
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()

torch.manual_seed(args.seed)
device = torch.device("cuda" if args.cuda else "cpu")
kwargs = {"num_workers": 1, "pin_memory": True} if args.cuda else {}

generator = torch.Generator().manual_seed(args.seed)
train_images = torch.rand(96, 1, 8, 8, generator=generator).round()
test_images = torch.rand(32, 1, 8, 8, generator=generator).round()
train_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(train_images), batch_size=args.batch_size, shuffle=True, **kwargs
)
test_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(test_images), batch_size=args.batch_size, shuffle=False, **kwargs
)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


model = VAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-3)


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def train(epoch):
    model.train()
    train_loss = 0
    for (data,) in train_loader:
        data = data.to(device)
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
        for (data,) in test_loader:
            data = data.to(device)
            mu, logvar = model.encode(data.view(-1, 64))
            test_loss += loss_function(model.decode(mu), data, mu, logvar).item()
    return test_loss / len(test_loader.dataset)


if __name__ == "__main__":
    for epoch in range(1, args.epochs + 1):
        train(epoch)
        test_loss = test()
        with torch.no_grad():
            sample = model.decode(torch.randn(8, 4).to(device)).cpu()
        print(f"sample mean {sample.mean().item():.4f}")
    print(f"final loss {test_loss:.8f}")
