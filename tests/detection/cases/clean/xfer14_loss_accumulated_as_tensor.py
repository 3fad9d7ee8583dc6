# twin of: bugs/xfer14_loss_accumulated_as_tensor.py
# area: transfer & sync
# correct: the running sum keeps detached values on the device and is read once per epoch
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(7, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    epoch_loss = torch.zeros((), device=device)
    for _ in range(4):
        x = torch.randn(10, 7, device=device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch_loss += loss.detach()
    print(epoch, epoch_loss.item() / 4)
