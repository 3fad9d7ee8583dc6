import torch
from torch import nn

scaler = torch.amp.GradScaler("cuda")
model = nn.Linear(8, 2).cuda()
reference = nn.Linear(8, 2).cuda().to(torch.bfloat16)  # frozen: never optimized
reference.requires_grad_(False)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)


def step(model, x):
    with torch.autocast("cuda", dtype=torch.float16):
        out = model(x)
    with torch.no_grad():
        target = reference(x.to(torch.bfloat16))
    return out, target
