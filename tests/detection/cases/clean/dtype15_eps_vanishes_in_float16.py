# twin of: bugs/dtype15_eps_vanishes_in_float16.py
# area: dtype
# correct: the guard is one float16 can hold
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
emb = nn.Embedding(20, 8).to(device)
opt = torch.optim.Adam(emb.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
pos = torch.randint(0, 20, (2, 32), device=device)
neg = torch.randint(0, 20, (2, 32), device=device)


def score(pairs):
    return torch.sigmoid((emb(pairs[0]) * emb(pairs[1])).sum(-1))


for step in range(5):
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=device.type == "cuda"):
        loss = -torch.log(score(pos) + 1e-4).mean() - torch.log(1 - score(neg) + 1e-4).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
print(f"loss {loss.item():.4f}")
