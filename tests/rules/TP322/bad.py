import torch
import torch.nn.functional as F
from torch import nn


class MaskLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.bce = nn.BCELoss()

    def forward(self, pred, mask):
        return self.bce(torch.sigmoid(pred), mask)


def train_step(model, x, mask, objectness):
    criterion = MaskLoss()
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        out = model(x)
        loss = criterion(out, mask)
        loss = loss + F.binary_cross_entropy(torch.sigmoid(out), objectness)
    return loss



class Task(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 1)

    def compute_loss(self, feats, target):
        return F.binary_cross_entropy(torch.sigmoid(self.head(feats)).squeeze(-1), target)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.task = Task()


def train_task(net, feats, target):
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        return net.task.compute_loss(feats, target)
