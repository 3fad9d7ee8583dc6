# source: https://github.com/sksq96/pytorch-summary/issues/64
# area: dtype
# bug: token ids are produced as a float tensor and passed to nn.Embedding
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
embed = nn.Embedding(30, 8).to(device)
head = nn.Linear(8, 2).to(device)
opt = torch.optim.SGD([*embed.parameters(), *head.parameters()], lr=0.1)
for _ in range(3):
    ids = torch.floor(torch.rand(4, 5, device=device) * 30)
    loss = head(embed(ids)).mean()  # expect: any
    opt.zero_grad()
    loss.backward()
    opt.step()
