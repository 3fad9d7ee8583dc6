# source: https://github.com/konstmish/prodigy/issues/38
# area: transfer & sync
# bug: `if loss < best:` on a device tensor reads it on the host at every step
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
best = float("inf")
best_state = None
for step in range(5):
    x = torch.randn(12, 3, device=device)
    loss = (model(x) - 1.0).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if loss < best:  # expect: TP206
        best = loss.detach()
        best_state = {k: v.clone() for k, v in model.state_dict().items()}
print(best_state is not None)
