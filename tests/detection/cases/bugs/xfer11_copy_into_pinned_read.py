# source: https://github.com/pytorch/pytorch/issues/137878
# area: transfer & sync
# bug: results are copied into a pinned host buffer with non_blocking=True and read without a sync
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(6, 6).to(device).eval()
staging = torch.empty(5, 6, pin_memory=torch.cuda.is_available())
with torch.no_grad():
    out = model(torch.randn(5, 6, device=device))
    staging.copy_(out, non_blocking=True)
    print(staging.sum(dim=1))  # expect: TP208
