"""Entry point: python -m pkg_lm.train"""

import torch
import torch.nn as nn

from .config import TrainConfig
from .data import batchify, get_batch, make_stream
from .model import TransformerLM


def train_epoch(model, data, cfg, criterion, optimizer):
    model.train()
    for i in range(0, data.size(0) - 1, cfg.seq_len):
        inputs, targets = get_batch(data, i, cfg.seq_len)
        optimizer.zero_grad()
        output = model(inputs)
        loss = criterion(output.view(-1, cfg.vocab_size), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()


def evaluate(model, data, cfg, criterion):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, data.size(0) - 1, cfg.seq_len):
            inputs, targets = get_batch(data, i, cfg.seq_len)
            output = model(inputs)
            total += criterion(output.view(-1, cfg.vocab_size), targets).item() * len(targets)
            count += len(targets)
    return total / count


def main():
    cfg = TrainConfig()
    torch.manual_seed(cfg.seed)
    generator = torch.Generator().manual_seed(cfg.seed)
    train_data = batchify(make_stream(360, cfg.vocab_size, generator), cfg.batch_size)
    val_data = batchify(make_stream(120, cfg.vocab_size, generator), 4)
    model = TransformerLM(cfg)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):
        train_epoch(model, train_data, cfg, criterion, optimizer)
        val_loss = evaluate(model, val_data, cfg, criterion)
        print(f"epoch {epoch} val loss {val_loss:.4f}")
    print(f"final loss {val_loss:.8f}")


if __name__ == "__main__":
    main()
