# source: https://github.com/xiaxin1998/DHCN/issues/14
# area: device placement
# bug: an accuracy helper calls .numpy() on the GPU logits it is given
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def accuracy(logits, labels):
    preds = logits.argmax(dim=1).numpy()  # expect: TP108
    return float(np.mean(preds == labels))


model = nn.Linear(6, 4).to(device).eval()
x = torch.randn(20, 6, device=device)
labels = np.random.randint(0, 4, size=20)
with torch.no_grad():
    print("acc", accuracy(model(x), labels))
