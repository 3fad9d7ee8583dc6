# twin of: bugs/dtype14_mask_fill_overflows_half.py
# area: dtype
# correct: the mask value is the lowest the scores' dtype holds, in float16 and float32 alike
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class AttentionPool(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.score = nn.Linear(dim, 1)

    def forward(self, x, pad):
        scores = self.score(x).squeeze(-1)
        scores = scores.masked_fill(pad, torch.finfo(scores.dtype).min)
        return (scores.softmax(-1).unsqueeze(-1) * x).sum(1)


model = AttentionPool().to(device).eval()
x = torch.randn(4, 7, 16, device=device)
pad = torch.zeros(4, 7, dtype=torch.bool, device=device)
pad[:, 5:] = True
if device.type == "cuda":
    model, x = model.half(), x.half()  # serve in half precision on the GPU
with torch.no_grad():
    print(model(x, pad).float().norm().item())
