import torch

scaler = torch.amp.GradScaler("cuda")


def step(model, x):
    with torch.autocast("cuda", dtype=torch.float16):
        return model(x)
