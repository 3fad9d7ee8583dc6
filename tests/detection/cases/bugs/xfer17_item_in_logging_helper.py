# source: https://github.com/meta-pytorch/torchtune/pull/522
# area: transfer & sync
# bug: a logging helper called every step reads loss.item() and the gradient norm
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
history = []


def log_step(step, loss, grad_norm):
    history.append((step, loss.item(), grad_norm.item()))  # expect: TP204


model = nn.Linear(9, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    x = torch.randn(6, 9, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    log_step(step, loss, norm)
print(history[-1][0])
