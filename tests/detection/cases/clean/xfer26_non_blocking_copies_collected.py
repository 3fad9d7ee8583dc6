# twin of: bugs/xfer26_non_blocking_copies_collected.py
# area: transfer & sync
# correct: all copies are queued without waiting, then one synchronize before the host reads them
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(6, 4).to(device).eval()
batches = [torch.randn(16, 6) for _ in range(4)]


@torch.no_grad()
def predict(model, batches):
    preds = []
    for x in batches:
        preds.append(model(x.to(device)).argmax(1).to("cpu", non_blocking=True))
    if device.type == "cuda":
        torch.cuda.synchronize()
    return torch.cat(preds)


print(predict(model, batches).bincount(minlength=4).tolist())
