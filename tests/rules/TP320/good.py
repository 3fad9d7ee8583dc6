import torch


def gradient_penalty(critic, real, fake, scaler):
    alpha = torch.rand(real.shape[0], 1, device=real.device)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    with torch.autocast("cuda", dtype=torch.float16):
        score = critic(mixed)
    (scaled,) = torch.autograd.grad(scaler.scale(score.sum()), mixed, create_graph=True)
    grads = scaled / scaler.get_scale()
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def r1_penalty(critic, real):
    # not scaled: the gradients are true ones
    real = real.requires_grad_(True)
    (grads,) = torch.autograd.grad(critic(real).sum(), real, create_graph=True)
    return grads.pow(2).sum(dim=1).mean()


def train(critic, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for real, fake in loader:
        loss = gradient_penalty(critic, real, fake, scaler) + r1_penalty(critic, real)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
