# source: https://github.com/pytorch/pytorch/issues/86264
# area: transfer & sync
# bug: a device-to-host copy with non_blocking=True is read before any synchronization
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 3).to(device).eval()
with torch.no_grad():
    scores = model(torch.randn(4, 8, device=device))
    host = scores.to("cpu", non_blocking=True)
    print(host.argmax(dim=1))  # expect: TP208
