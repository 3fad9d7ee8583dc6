# source: https://github.com/lllyasviel/stable-diffusion-webui-forge/issues/732
# area: device placement
# bug: padding features with torch.zeros (CPU) before concatenating with GPU features
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
encoder = nn.Linear(6, 5).to(device)
head = nn.Linear(8, 1).to(device)
opt = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.1)
for _ in range(3):
    feats = encoder(torch.randn(4, 6, device=device))
    padded = torch.cat([feats, torch.zeros(4, 3)], dim=1)  # expect: any
    loss = head(padded).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
