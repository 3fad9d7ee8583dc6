import torch


def step(model, x, optimizer):
    with torch.autocast("cuda"):
        loss = model(x).sum()
    loss.backward()
    optimizer.step()
