import torch


def gradient_penalty(critic, real, fake, scaler):
    alpha = torch.rand(real.shape[0], 1, device=real.device)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    with torch.autocast("cuda", dtype=torch.float16):
        score = critic(mixed)
    (grads,) = torch.autograd.grad(scaler.scale(score.sum()), mixed, create_graph=True)
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def train(critic, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for real, fake in loader:
        loss = gradient_penalty(critic, real, fake, scaler)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
