import torch


def train(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        loss = model(x).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def train_with_accumulation(model, loader, optimizer, every):
    scaler = torch.amp.GradScaler("cuda")
    for i, (x, y) in enumerate(loader):
        scaler.scale(model(x).sum() / every).backward()
        if (i + 1) % every:
            continue  # accumulate: nothing unscaled yet, the update waits for the step
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()


def step_skipping_non_finite(model, optimizer, scaler, max_norm):
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)  # skips the update of the weights itself on inf/NaN
    scaler.update()
