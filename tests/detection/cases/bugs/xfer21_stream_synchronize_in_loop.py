# source: https://github.com/PaddlePaddle/Paddle/issues/6794
# area: transfer & sync
# bug: the current stream is synchronized after every step
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(10, 10).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(4):
    loss = model(torch.randn(4, 10, device=device)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if torch.cuda.is_available():
        torch.cuda.current_stream().synchronize()  # expect: TP207
