import torch
from torch import nn
from torch.nn.utils import clip_grad_value_


def train(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        clip_grad_value_(model.parameters(), 5.0)
        scaler.step(optimizer)
        scaler.update()


def plain(model, loss):
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # no scaler here
