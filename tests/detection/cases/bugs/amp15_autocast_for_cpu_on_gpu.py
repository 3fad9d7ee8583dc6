# source: https://github.com/pytorch/pytorch/issues/114458
# area: AMP
# bug: validation opens a CPU autocast region while the model runs on the GPU: it silently runs in float32
import torch
from torch import nn
from torch.nn import functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(64, 12), torch.randint(0, 3, (64,))


@torch.no_grad()
def validate(model, x, y):
    model.eval()
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):  # expect: any
        logits = model(x.to(device))
    return (logits.argmax(1) == y.to(device)).float().mean().item()


for epoch in range(3):
    model.train()
    loss = F.cross_entropy(model(x.to(device)), y.to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"epoch {epoch} accuracy {validate(model, x, y):.3f}")
