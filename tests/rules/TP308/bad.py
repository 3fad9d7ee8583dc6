import torch
from torch import nn

scaler = torch.amp.GradScaler("cuda")
model = nn.Linear(8, 2).cuda().bfloat16()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)


def step(model, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return model(x)
