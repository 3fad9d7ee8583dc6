# source: https://github.com/pytorch/pytorch/issues/2830
# area: device placement
# bug: the optimizer state is loaded while the model is on the CPU and the model is moved afterwards: Adam's moments stay on the CPU
import io

import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(model, optimizer, steps=3):
    for _ in range(steps):
        x = torch.randn(8, 4, device=device)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


first = nn.Linear(4, 2).to(device)
first_opt = torch.optim.Adam(first.parameters(), lr=1e-2)
train(first, first_opt)
buffer = io.BytesIO()
torch.save({"model": first.state_dict(), "optimizer": first_opt.state_dict()}, buffer)
buffer.seek(0)


def resume(buffer):
    ckpt = torch.load(buffer, map_location="cpu")
    model = nn.Linear(4, 2)
    model.load_state_dict(ckpt["model"])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    optimizer.load_state_dict(ckpt["optimizer"])  # expect[resume]: TP120
    model.to(device)  # expect[resume]: TP120
    return model, optimizer


model, optimizer = resume(buffer)
print("loss", round(train(model, optimizer), 4))
