import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model.to(device), optimizer
        self.scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")

    def optimize_parameters(self, x, y):
        with torch.autocast(device.type, dtype=torch.float16):
            loss = nn.functional.mse_loss(self.model(x), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad()


def train(trainer, loader, epochs):
    for _ in range(epochs):
        for x, y in loader:
            trainer.optimize_parameters(x.to(device), y.to(device))


def train_one_epoch(model, optimizer, loader):
    scaler = torch.amp.GradScaler("cuda")  # once per epoch, stepped in the batch loop
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x.to(device)).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def fit(model, optimizer, loader, epochs):
    for _ in range(epochs):
        train_one_epoch(model, optimizer, loader)
