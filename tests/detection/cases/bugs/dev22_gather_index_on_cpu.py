# source: https://github.com/zhongyy/Face-Transformer/issues/37
# area: device placement
# bug: torch.gather gets a CPU index tensor for GPU logits
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(5, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(6, 5, device=device)
    target = torch.randint(0, 4, (6, 1))
    logp = torch.log_softmax(model(x), dim=1)
    picked = torch.gather(logp, 1, target)  # expect: TP150
    loss = -picked.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
