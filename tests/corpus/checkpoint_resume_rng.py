"""Train, save a full checkpoint (model, optimizer, scheduler, epoch, RNG states, loss
history) into the working directory, then resume from it as a restarted job would."""

import argparse
import os
import random
import shutil

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

CHECKPOINT_DIR = "checkpoints_resume_demo"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 24)
        self.fc2 = nn.Linear(24, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def build(lr):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.8)
    return model, optimizer, scheduler


def train_epoch(model, loader, optimizer, criterion):
    model.train()
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


def save_checkpoint(path, epoch, model, optimizer, scheduler, history):
    torch.save(
        {
            "epoch": epoch,
            "model_state_dict": model.state_dict(),
            "optimizer_state_dict": optimizer.state_dict(),
            "scheduler_state_dict": scheduler.state_dict(),
            "torch_rng_state": torch.get_rng_state(),
            "numpy_rng_state": np.random.get_state(),
            "python_rng_state": random.getstate(),
            "history": history,
        },
        path,
    )


def load_checkpoint(path, model, optimizer, scheduler):
    checkpoint = torch.load(path, weights_only=False)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
    torch.set_rng_state(checkpoint["torch_rng_state"])
    np.random.set_state(checkpoint["numpy_rng_state"])
    random.setstate(checkpoint["python_rng_state"])
    return checkpoint["epoch"], checkpoint["history"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--resume-after", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)

    x = torch.from_numpy(np.random.randn(120, 4).astype(np.float32))
    y = torch.from_numpy((np.abs(x.numpy()).argmax(axis=1) % 3).astype(np.int64))
    loader = DataLoader(TensorDataset(x, y), batch_size=20, shuffle=True)
    criterion = nn.CrossEntropyLoss()
    os.makedirs(CHECKPOINT_DIR, exist_ok=True)
    path = os.path.join(CHECKPOINT_DIR, "last.pt")
    try:
        model, optimizer, scheduler = build(args.lr)
        history = []
        for epoch in range(args.resume_after):
            history.append(train_epoch(model, loader, optimizer, criterion))
            scheduler.step()
        save_checkpoint(path, args.resume_after, model, optimizer, scheduler, history)
        del model, optimizer, scheduler

        # A new process would start here: rebuild everything and resume.
        model, optimizer, scheduler = build(args.lr)
        start_epoch, history = load_checkpoint(path, model, optimizer, scheduler)
        for epoch in range(start_epoch, args.epochs):
            history.append(train_epoch(model, loader, optimizer, criterion))
            scheduler.step()
            print(f"epoch {epoch} loss {history[-1]:.4f} lr {scheduler.get_last_lr()[0]:.5f}")
    finally:
        shutil.rmtree(CHECKPOINT_DIR, ignore_errors=True)
    print(f"final loss {history[-1]:.8f}")


if __name__ == "__main__":
    main()
