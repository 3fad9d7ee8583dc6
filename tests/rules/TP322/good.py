import torch
import torch.nn.functional as F
from torch import nn


class MaskLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.bce = nn.BCEWithLogitsLoss()

    def forward(self, pred, mask):
        return self.bce(pred, mask)


def train_step(model, criterion, x, mask):
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        out = model(x)
        loss = criterion(out, mask)
    probs = torch.sigmoid(out.float())
    return loss + F.binary_cross_entropy(probs, mask)  # outside autocast: float32


def on_cpu(model, x, mask):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        return F.binary_cross_entropy(torch.sigmoid(model(x)), mask)


def autocast_turned_off(model, x, mask):
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        probs = torch.sigmoid(model(x))
        with torch.autocast(device_type="cuda", enabled=False):
            return F.binary_cross_entropy(probs.float(), mask)
