# twin of: bugs/xfer04_cpu_numpy_every_step.py
# area: transfer & sync
# correct: only the first batch is copied to the host (for a preview)
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
preview = None
for i in range(5):
    x = torch.randn(8, 4, device=device)
    out = model(x)
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i == 0:
        preview = out.detach().cpu()
print(preview.shape)
