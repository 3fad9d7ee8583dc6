# source: https://github.com/openvdb/fvdb-reality-capture/pull/144
# area: transfer & sync
# bug: the progress display reads loss.item() at every step
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(model, opt, steps):
    for step in range(steps):
        x = torch.randn(32, 10, device=device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        status = f"step {step} loss {loss.item():.4f}"  # expect: TP204
        print(status, end="\r")
    print()


model = nn.Linear(10, 10).to(device)
train(model, torch.optim.Adam(model.parameters(), lr=1e-3), 4)
