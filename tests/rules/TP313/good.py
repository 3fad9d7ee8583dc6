import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 2).to(device).half()
x = torch.randn(4, 8, device=device).half()
out = model(x)
conv = nn.Conv2d(3, 4, 3).to(torch.bfloat16)
feat = conv(torch.rand(1, 3, 8, 8).to(torch.bfloat16))
full = nn.Linear(8, 2)(torch.randn(4, 8))
made_half = nn.Linear(8, 2, dtype=torch.float16).to(device)
y = made_half(x)


class Adapter(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, feats):
        return self.proj(feats)


adapter = Adapter().to(torch.bfloat16)  # casts self.proj too
z = adapter(torch.randn(4, 8, dtype=torch.bfloat16))
