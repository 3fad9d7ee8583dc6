# source: https://discuss.pytorch.org/t/gpu-memory-increase-while-i-wanna-to-backward-with-accumulative-loss/43284
# area: transfer & sync
# bug: `epoch_loss += loss` keeps every step's graph alive on the device
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(7, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    epoch_loss = 0
    for _ in range(4):
        x = torch.randn(10, 7, device=device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch_loss += loss  # expect: TP209
    print(epoch, epoch_loss.item() / 4)
