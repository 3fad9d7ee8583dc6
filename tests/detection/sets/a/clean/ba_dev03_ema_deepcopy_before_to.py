# twin of: bugs/ba_dev03_ema_deepcopy_before_to.py
# area: device placement
# correct: the EMA copy is made after model.to(device), so deepcopy clones weights that already live on the device
import copy
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SmallConvNet(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(16, n_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class ModelEMA:
    """Keeps an exponential moving average of a model's weights for evaluation."""

    def __init__(self, model, decay=0.99):
        self.ema = copy.deepcopy(model).eval()
        self.decay = decay
        for p in self.ema.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        for ema_p, p in zip(self.ema.parameters(), model.parameters()):
            ema_p.mul_(self.decay).add_(p.detach(), alpha=1.0 - self.decay)
        for ema_b, b in zip(self.ema.buffers(), model.buffers()):
            ema_b.copy_(b)


@torch.no_grad()
def evaluate(net, x, y):
    net.eval()
    return (net(x).argmax(1) == y).float().mean().item()


def main():
    x = torch.randn(128, 1, 12, 12)
    y = torch.randint(0, 4, (128,))
    model = SmallConvNet()
    model = model.to(device)
    ema = ModelEMA(model, decay=0.95)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(20):
        idx = torch.randint(0, 128, (32,))
        xb, yb = x[idx].to(device), y[idx].to(device)
        model.train()
        loss = F.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema.update(model)
    xv, yv = x.to(device), y.to(device)
    print(f"model acc {evaluate(model, xv, yv):.3f}  ema acc {evaluate(ema.ema, xv, yv):.3f}")


if __name__ == "__main__":
    main()
