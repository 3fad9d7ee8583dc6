# source: https://github.com/meta-pytorch/torchtune/pull/522
# area: transfer & sync
# bug: AverageMeter.update() turns the CUDA loss into a Python float every step, forcing a host-device sync per iteration
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class AverageMeter:
    """Tracks a running average, in the style of the ImageNet example."""

    def __init__(self, name):
        self.name = name
        self.reset()

    def reset(self):
        self.sum = 0.0
        self.count = 0

    def update(self, val, n=1):
        self.sum += float(val) * n  # expect[meter]: any
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


class TinyRegressor(nn.Module):
    def __init__(self, d_in=16, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def make_loader(n=256, d_in=16):
    x = torch.randn(n, d_in)
    y = x[:, :4].sum(dim=1) + 0.1 * torch.randn(n)
    return DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)


def train_one_epoch(model, loader, opt, loss_meter):
    model.train()
    loss_meter.reset()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_meter.update(loss.detach(), x.size(0))  # expect[meter]: any
    return loss_meter.avg


def main():
    model = TinyRegressor().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loader = make_loader()
    meter = AverageMeter("loss")
    for epoch in range(3):
        avg = train_one_epoch(model, loader, opt, meter)
        print(f"epoch {epoch}: train loss {avg:.4f}")


if __name__ == "__main__":
    main()
