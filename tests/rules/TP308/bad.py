import torch

scaler = torch.amp.GradScaler("cuda")


def step(model, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return model(x)
