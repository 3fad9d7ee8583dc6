import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model.to(device), optimizer

    def optimize_parameters(self, x, y):
        scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
        with torch.autocast(device.type, dtype=torch.float16):
            loss = nn.functional.mse_loss(self.model(x), y)
        scaler.scale(loss).backward()
        scaler.step(self.optimizer)
        scaler.update()
        self.optimizer.zero_grad()


def train(trainer, loader, epochs):
    for _ in range(epochs):
        for x, y in loader:
            trainer.optimize_parameters(x.to(device), y.to(device))


def train_inline(model, optimizer, loader):
    for x, y in loader:
        scaler = torch.cuda.amp.GradScaler()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x.to(device)).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


class GanTrainer:
    def __init__(self, net_g, optimizer_g):
        self.net_g, self.optimizer_g = net_g.to(device), optimizer_g

    def optimize_generator(self, noise):
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast(device.type, dtype=torch.float16):
            loss = self.net_g(noise).mean()
        scaler.scale(loss).backward()
        scaler.step(self.optimizer_g)
        scaler.update()


def noise_batches(n):
    for _ in range(n):
        yield torch.randn(4, 8)


def fit_gan(gan):
    for noise in noise_batches(8):  # a generator, not a DataLoader: hot by what the body does
        gan.optimize_generator(noise.to(device))
