# source: https://github.com/pytorch/pytorch/issues/86264
# area: transfer & sync
# bug: predictions are copied to the host with non_blocking=True and concatenated without a synchronize
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
    return torch.cat(preds)  # expect: TP208


print(predict(model, batches).bincount(minlength=4).tolist())
