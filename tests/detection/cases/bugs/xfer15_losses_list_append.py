# source: https://theneuralbase.com/pytorch/learn/intermediate/memory-leak-detection/
# area: transfer & sync
# bug: appending the loss tensor itself to a history list keeps every graph on the device
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
history = []
for step in range(6):
    x = torch.randn(8, 5, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    history.append(loss)  # expect: any
print(torch.stack(history).mean().item())
