import torch
import torch.nn.functional as F
from torch import nn


class WithLoss(nn.Module):
    """The loss computed in forward, a common way to balance memory across GPUs."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        loss = F.cross_entropy(self.net(x), y)
        return loss


def train(net, batches, device):
    model = WithLoss(net).to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
    for x, y in batches:
        loss = model(x.to(device), y.to(device))
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


class Detector(nn.Module):
    """Returns its loss beside its predictions, from a method of its own."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def compute_loss(self, preds, targets):
        return F.mse_loss(preds, targets) + preds.abs().mean()

    def forward(self, images, targets):
        preds = self.net(images)
        return self.compute_loss(preds, targets), preds


def train_detector(net, batches, device):
    model = Detector(net).to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    optimizer = torch.optim.Adam(model.parameters())
    for images, targets in batches:
        loss, _ = model(images.to(device), targets.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
