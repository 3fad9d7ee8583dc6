import torch


def train(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        loss = model(x).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)


def train_skipping_bad_steps(model, loader, optimizer, max_norm):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        scaler.scale(model(x).sum()).backward()
        scaler.unscale_(optimizer)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        if not torch.isfinite(norm):
            continue
        scaler.step(optimizer)
        scaler.update()


def step_unless_too_large(model, optimizer, scaler, max_norm):
    scaler.unscale_(optimizer)
    if torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm) > 10 * max_norm:
        return False
    scaler.step(optimizer)
    scaler.update()
    return True


def train_with_a_step_helper(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        scaler.scale(model(x).sum()).backward()
        step_unless_too_large(model, optimizer, scaler, 1.0)
