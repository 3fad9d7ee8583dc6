import torch
from torch import nn


def train(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()


class ClipCallback:
    def on_batch_end(self, runner):
        runner.scaler.scale(runner.loss).backward()
        nn.utils.clip_grad_norm_(runner.model.parameters(), 1.0)
        runner.scaler.step(runner.optimizer)
        runner.scaler.update()
