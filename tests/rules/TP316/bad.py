import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)


def evaluate(x):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        return model(x.to(device))


def legacy(x):
    with torch.cpu.amp.autocast():
        return model(x.to(device))


def positional(x):
    with torch.autocast("cpu"):
        return model(x.to(device))
