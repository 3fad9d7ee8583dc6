import torch


def step(model, x, optimizer, scaler: torch.amp.GradScaler):
    loss = model(x).sum()
    scaler.scale(loss)
    loss.backward()
    scaler.step(optimizer)
    scaler.update()


scaler = torch.amp.GradScaler("cuda")
