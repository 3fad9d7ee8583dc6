"""Entry point: python -m pkg_vision.train"""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from pkg_vision.data import DotDataset
from pkg_vision.engine import evaluate, train_one_epoch
from pkg_vision.model import CoordConvRegressor


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.01)
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(0)
    train_loader = DataLoader(DotDataset(128, seed=0), batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(DotDataset(48, seed=1), batch_size=args.batch_size)
    model = CoordConvRegressor()
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        train_loss = train_one_epoch(model, train_loader, criterion, optimizer)
        val_loss, distance = evaluate(model, val_loader, criterion)
        print(f"epoch {epoch} train {train_loss:.4f} val {val_loss:.4f} dist {distance:.3f}")
    print(f"final loss {val_loss:.8f}")


if __name__ == "__main__":
    main()
