# twin of: bugs/xfer10_non_blocking_d2h_read.py
# area: transfer & sync
# correct: the asynchronous copy is waited for before the host reads it
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 3).to(device).eval()
with torch.no_grad():
    scores = model(torch.randn(4, 8, device=device))
    host = scores.to("cpu", non_blocking=True)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    print(host.argmax(dim=1))
